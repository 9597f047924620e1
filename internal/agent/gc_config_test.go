package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/agent/config"
	"github.com/drover-project/drover/internal/server"
)

// The server's garbage collection keys reach the server, unset ones keep
// Nomad's defaults, and a negative one is an error naming the key.
func TestServerConfig_GC(t *testing.T) {
	parsed, err := config.Parse("server.hcl", []byte(`
server {
  enabled           = true
  job_gc_interval   = "30s"
  job_gc_threshold  = "2h"
  node_gc_threshold = "48h"
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
	want := server.GCConfig{Interval: 30 * time.Second, JobThreshold: 2 * time.Hour, EvalThreshold: time.Hour,
		BatchEvalThreshold: 24 * time.Hour, DeploymentThreshold: time.Hour, NodeThreshold: 48 * time.Hour}
	if sc.GC != want {
		t.Fatalf("GC config %+v, want %+v", sc.GC, want)
	}
	parsed, err = config.Parse("server.hcl", []byte("data_dir = \"/srv/d\"\nserver {\n  enabled = true\n  eval_gc_threshold = \"-1h\"\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = config.Merge(config.DefaultConfig(), parsed).Validate()
	if err == nil || !strings.Contains(err.Error(), "server.eval_gc_threshold must not be negative") {
		t.Fatalf("negative eval_gc_threshold: %v", err)
	}
}
