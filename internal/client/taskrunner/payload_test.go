package taskrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func TestWriteDispatchPayload(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
		payload          []byte
		wantErr          bool
	}{
		{name: "written under local", file: "input.txt", payload: []byte("hello"), want: "local/input.txt"},
		{name: "nested dirs created", file: "in/data.json", payload: []byte("{}"), want: "local/in/data.json"},
		{name: "dotdot stays inside local", file: "../../etc/x", payload: []byte("x"), want: "local/etc/x"},
		{name: "no payload writes nothing", file: "input.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			task := &structs.Task{Name: "t", DispatchPayload: &structs.DispatchPayloadConfig{File: tc.file}}
			alloc := &structs.Allocation{ID: "a", Job: &structs.Job{ID: "j", Payload: tc.payload}}
			tr := New(Config{Alloc: alloc, Task: task, TaskDir: dir})
			if err := tr.writeDispatchPayload(); err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if _, err := os.Stat(filepath.Join(dir, "local", tc.file)); !os.IsNotExist(err) {
					t.Fatalf("payload file written without a payload: %v", err)
				}
				return
			}
			got, err := os.ReadFile(filepath.Join(dir, tc.want))
			if err != nil || string(got) != string(tc.payload) {
				t.Fatalf("read %s: %q %v, want %q", tc.want, got, err, tc.payload)
			}
		})
	}
}
