package cli

import (
	"testing"

	"github.com/hashicorp/nomad/api"
)

// After a reconnect the stream starts over from the first log file; what
// was already printed is skipped exactly, across rotated files.
func TestLogPositionSkipsWhatWasPrinted(t *testing.T) {
	var p logPosition
	frame := func(file string, end int64, data string) *api.StreamFrame {
		return &api.StreamFrame{File: "alloc/logs/t.stdout." + file, Offset: end, Data: []byte(data)}
	}
	var got string
	feed := func(fs ...*api.StreamFrame) {
		for _, f := range fs {
			if out := p.skip(f); out != nil {
				got += string(out.Data)
			}
		}
	}
	// First connection: file 0 whole, part of file 1.
	feed(frame("0", 4, "abcd"), frame("1", 3, "efg"))
	// Reconnected: everything again from the start, and more.
	feed(frame("0", 4, "abcd"), frame("1", 5, "efghi"), frame("1", 7, "jk"), frame("2", 2, "lm"))
	if got != "abcdefghijklm" {
		t.Fatalf("printed %q, want every byte once", got)
	}
}
