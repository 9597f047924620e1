package structs

import (
	"runtime"
	"strings"
	"testing"
)

// An unchanged job is never seen as changed: the comparison used to encode
// maps in Go's random order, so a config with several keys could count as
// a new version. Server-managed fields are ignored; any user field counts.
func TestSpecChanged(t *testing.T) {
	cfg := map[string]any{"command": "/bin/sh", "args": []any{"-c", "true"}, "env": map[string]any{"A": "1", "B": "2", "C": "3"}, "x": 1, "y": 2}
	j := jobWithConfig(cfg)
	for range 50 {
		same := j.Copy()
		same.Version, same.JobModifyIndex, same.SubmitTime, same.Status, same.Stable = 9, 99, 12345, "running", true
		if j.SpecChanged(same) {
			t.Fatal("an unchanged job was seen as changed")
		}
	}
	changed := j.Copy()
	changed.TaskGroups[0].Tasks[0].Config["env"].(map[string]any)["B"] = "two"
	if !j.SpecChanged(changed) || !j.SpecChanged(nil) {
		t.Fatal("a changed job was seen as unchanged")
	}
}

// Comparing a 4 MB job allocated about 100 MB (two deep copies through
// msgpack and two encodings into growing buffers); 50 MB jobs drove the
// server's memory to gigabytes. It now allocates less than the job itself.
func TestSpecChangedAllocatesLittle(t *testing.T) {
	big := strings.Repeat("x", 4<<20)
	a := jobWithConfig(map[string]any{"pad": big, "command": "/bin/true"})
	b := jobWithConfig(map[string]any{"pad": big, "command": "/bin/false"})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	changed := a.SpecChanged(b)
	runtime.ReadMemStats(&after)
	if !changed {
		t.Fatal("different jobs compared equal")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("comparing two 4 MB jobs allocated %d bytes", n)
	}
}
