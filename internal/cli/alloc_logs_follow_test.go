package cli

import (
	"errors"
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
			if out, _ := p.skip(f, false); out != nil {
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

// A resumed stream that starts past the position (an older file was
// rotated away between the listing and the request) is a gap: reported,
// and the position stays, so the follower can start over from the start.
func TestLogPositionReportsAGap(t *testing.T) {
	p := logPosition{known: true, index: 1, offset: 5}
	for _, f := range []*api.StreamFrame{
		{File: "alloc/logs/t.stdout.1", Offset: 9, Data: []byte("ab")}, // starts at 7, not 5
		{File: "alloc/logs/t.stdout.2", Offset: 4, Data: []byte("cd")}, // a later file, not from its start
	} {
		if out, gap := p.skip(f, true); out != nil || !gap {
			t.Fatalf("%s@%d: printed %v, gap %v", f.File, f.Offset, out, gap)
		}
	}
	if p.index != 1 || p.offset != 5 {
		t.Fatalf("position moved to %+v", p)
	}
	// From the start of the next file is no gap (the last one was complete),
	// and without the check a gap is accepted (the bytes are gone).
	if out, gap := p.skip(&api.StreamFrame{File: "alloc/logs/t.stdout.2", Offset: 2, Data: []byte("ef")}, true); gap || string(out.Data) != "ef" {
		t.Fatalf("next file: %v %v", out, gap)
	}
	if out, gap := p.skip(&api.StreamFrame{File: "alloc/logs/t.stdout.2", Offset: 9, Data: []byte("gh")}, false); gap || string(out.Data) != "gh" {
		t.Fatalf("unchecked gap: %v %v", out, gap)
	}
}

// The api client's wording of a broken stream is told plainly.
func TestStreamErrText(t *testing.T) {
	for in, want := range map[string]string{
		`failed to decode log endpoint response as JSON: ""`:                           "the connection to the agent was cut",
		`failed to decode log endpoint response as JSON: "client agent shutting down"`: "the agent said: client agent shutting down",
		`Unexpected response code: 404 (Unknown allocation)`:                           "Unexpected response code: 404 (Unknown allocation)",
	} {
		if got := streamErrText(errors.New(in)); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
