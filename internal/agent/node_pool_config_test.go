package agent

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/agent/config"
)

// client.node_pool must name a pool a client may join.
func TestClientNodePoolValidated(t *testing.T) {
	for pool, ok := range map[string]bool{"gpu": true, "gpu_a-1": true, "all": false, "bad pool": false, "a/b": false} {
		parsed, err := config.Parse("client.hcl", []byte("data_dir = \"/srv/d\"\nclient {\n  enabled = true\n  node_pool = \""+pool+"\"\n}\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = config.Merge(config.DefaultConfig(), parsed).Validate()
		if ok && err != nil {
			t.Fatalf("node_pool %q refused: %v", pool, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "client.node_pool")) {
			t.Fatalf("node_pool %q: %v", pool, err)
		}
	}
}
