package agent

import (
	"testing"

	"github.com/drover-project/drover/internal/agent/config"
)

// The server's Raft tuning in the agent file reaches the server.
func TestServerConfig_RaftTuning(t *testing.T) {
	parsed, err := config.Parse("server.hcl", []byte(`
server {
  enabled                 = true
  raft_trailing_logs      = 50000
  raft_snapshot_threshold = 16384
  raft_boltdb {
    no_freelist_sync = true
  }
}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := config.Merge(config.DefaultConfig(), parsed)
	if err := c.NormalizeAddrs(); err != nil {
		t.Fatal(err)
	}
	sc, err := serverConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if sc.RaftTrailingLogs != 50000 || sc.RaftSnapshotThreshold != 16384 || !sc.RaftNoFreelistSync {
		t.Fatalf("trailing logs %d, snapshot threshold %d, no freelist sync %v", sc.RaftTrailingLogs,
			sc.RaftSnapshotThreshold, sc.RaftNoFreelistSync)
	}

	d := config.DefaultConfig()
	if err := d.NormalizeAddrs(); err != nil {
		t.Fatal(err)
	}
	sc, err = serverConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	if sc.RaftTrailingLogs != 10240 || sc.RaftNoFreelistSync { // Nomad's defaults
		t.Fatalf("defaults: trailing logs %d, no freelist sync %v", sc.RaftTrailingLogs, sc.RaftNoFreelistSync)
	}
}
