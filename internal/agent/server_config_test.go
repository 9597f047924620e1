package agent

import (
	"strings"
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

// server.job_max_count reaches the server: unset is the default, 0 turns
// the limit off, and a negative value is a configuration error naming the
// key.
func TestServerConfig_JobMaxCount(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{`server { enabled = true }`, 50000},
		{`server { enabled = true` + "\n" + `job_max_count = 200 }`, 200},
		{`server { enabled = true` + "\n" + `job_max_count = 0 }`, -1},
	} {
		parsed, err := config.Parse("server.hcl", []byte(tc.src))
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
		if sc.JobMaxCount != tc.want {
			t.Errorf("%s: JobMaxCount = %d, want %d", tc.src, sc.JobMaxCount, tc.want)
		}
	}
	parsed, err := config.Parse("server.hcl", []byte("data_dir = \"/srv/d\"\nserver {\n  enabled = true\n  job_max_count = -5\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = config.Merge(config.DefaultConfig(), parsed).Validate()
	if err == nil || !strings.Contains(err.Error(), "server.job_max_count must not be negative") {
		t.Fatalf("negative job_max_count: %v", err)
	}
}

// server.default_scheduler_config reaches the server as the configuration
// its first leader stores; unset keys keep Nomad's defaults.
func TestServerConfig_DefaultSchedulerConfig(t *testing.T) {
	parsed, err := config.Parse("server.hcl", []byte(`
server {
  enabled = true
  default_scheduler_config {
    scheduler_algorithm             = "spread"
    memory_oversubscription_enabled = true
    pause_eval_broker               = true
    preemption_config {
      service_scheduler_enabled = true
      system_scheduler_enabled  = false
    }
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
	if sc.SchedulerAlgorithm != "spread" || !sc.MemoryOversubscriptionEnabled || !sc.PauseEvalBroker || sc.RejectJobRegistration ||
		!sc.PreemptionServiceEnabled || sc.PreemptionSystemEnabled || sc.PreemptionBatchEnabled || sc.PreemptionSysBatchEnabled {
		t.Fatalf("server config: %+v", sc)
	}
}

// server.event_buffer_size and enable_event_broker reach the server; a
// size outside 1..1,000,000 is a configuration error naming the key.
func TestServerConfig_EventBroker(t *testing.T) {
	for _, tc := range []struct {
		src      string
		size     int
		disabled bool
	}{
		{`server { enabled = true }`, 100, false},
		{`server { enabled = true` + "\n" + `event_buffer_size = 5000 }`, 5000, false},
		{`server { enabled = true` + "\n" + `enable_event_broker = false }`, 100, true},
	} {
		parsed, err := config.Parse("server.hcl", []byte(tc.src))
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
		if sc.EventBufferSize != tc.size || sc.DisableEventBroker != tc.disabled {
			t.Errorf("%s: size %d disabled %v, want %d %v", tc.src, sc.EventBufferSize, sc.DisableEventBroker, tc.size, tc.disabled)
		}
	}
	for _, bad := range []string{"0", "-1", "1000001"} {
		parsed, err := config.Parse("server.hcl", []byte("data_dir = \"/srv/d\"\nserver {\n  enabled = true\n  event_buffer_size = "+bad+"\n}\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = config.Merge(config.DefaultConfig(), parsed).Validate()
		if err == nil || !strings.Contains(err.Error(), "server.event_buffer_size must be between 1 and 1000000") {
			t.Fatalf("event_buffer_size = %s: %v", bad, err)
		}
	}
}

// server.deploy_query_rate_limit reaches the server's deployment watcher
// (unset: Nomad's default, 100); a negative rate is refused naming the key.
func TestServerConfig_DeployQueryRateLimit(t *testing.T) {
	for _, tc := range []struct {
		src  string
		rate float64
	}{
		{`server { enabled = true }`, 100},
		{`server { enabled = true` + "\n" + `deploy_query_rate_limit = 250.5 }`, 250.5},
	} {
		parsed, err := config.Parse("server.hcl", []byte(tc.src))
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
		if sc.DeploymentQueryRateLimit != tc.rate {
			t.Errorf("%s: rate %v, want %v", tc.src, sc.DeploymentQueryRateLimit, tc.rate)
		}
	}
	parsed, err := config.Parse("server.hcl", []byte("data_dir = \"/srv/d\"\nserver {\n  enabled = true\n  deploy_query_rate_limit = -1\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = config.Merge(config.DefaultConfig(), parsed).Validate()
	if err == nil || !strings.Contains(err.Error(), "server.deploy_query_rate_limit must be greater than 0") {
		t.Fatalf("deploy_query_rate_limit = -1: %v", err)
	}
}
