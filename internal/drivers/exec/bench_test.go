package exec

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/rawexec"
)

// BenchmarkStartTask measures StartTask → the task's own program running,
// isolated (exec) against raw_exec's same supervisor without isolation:
//
//	go test -run '^$' -bench StartTask -benchtime 30x ./internal/drivers/exec
func BenchmarkStartTask(b *testing.B) {
	for _, name := range []string{"exec", "raw_exec"} {
		b.Run(name, func(b *testing.B) {
			var d drivers.Driver = New(Config{})
			if name == "raw_exec" {
				d = rawexec.New(rawexec.Config{Enabled: true})
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				tc := newTask(b, fmt.Sprintf("b%d", i), map[string]any{"command": "/bin/sleep", "args": []any{"600"}})
				b.StartTimer()
				if _, err := d.StartTask(tc); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := d.DestroyTask(tc.ID, true); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
