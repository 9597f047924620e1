package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A non-dev agent keeps its jobs (Raft log and snapshot) and its signing key
// across a kill and restart.
func TestRestartKeepsJobsAndSigningKey(t *testing.T) {
	dataDir := t.TempDir()
	extra := map[string]any{
		"server": map[string]any{"enabled": true, "bootstrap_expect": 1, "raft_snapshot_threshold": 4, "raft_snapshot_interval": "200ms"},
	}
	a := startAgent(t, dataDir, nil, extra)
	a.waitReady(false)
	before := a.jwksKeys()
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		if _, _, err := a.client.Jobs().Register(rawExecJob(id, "batch", 1, "true"), nil); err != nil {
			t.Fatal(err)
		}
	}
	snapDir := filepath.Join(dataDir, "server", "raft", "snapshots")
	waitFor(t, 20*time.Second, "a raft snapshot on disk", func() bool {
		entries, _ := os.ReadDir(snapDir)
		return len(entries) > 0
	})
	// One more write after the snapshot: it must come back from the log.
	if _, _, err := a.client.Jobs().Register(rawExecJob("after-snapshot", "batch", 1, "true"), nil); err != nil {
		t.Fatal(err)
	}
	a.kill()

	b := startAgent(t, dataDir, nil, extra)
	b.waitReady(false)
	jobs, _, err := b.client.Jobs().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 7 {
		t.Fatalf("want 7 jobs after restart, got %d", len(jobs))
	}
	after := b.jwksKeys()
	if len(before) != 1 || len(after) != 1 || before[0] != after[0] {
		t.Fatalf("signing key changed across restart: %v -> %v", before, after)
	}
}
