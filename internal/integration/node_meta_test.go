package integration

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// metaJob is a sleeping service job constrained on ${meta.<key>} = value.
func metaJob(id, key, value string) *api.Job {
	job := sleepJob(id, 1, nil)
	job.Constraints = []*api.Constraint{api.NewConstraint("${meta."+key+"}", "=", value)}
	return job
}

// placedOn waits for jobID's one allocation and returns its node.
func placedOn(t *testing.T, a *agent, jobID string) string {
	t.Helper()
	var node string
	waitFor(t, 20*time.Second, jobID+" placed", func() bool {
		stubs := a.allocsOf(jobID)
		if len(stubs) == 1 {
			node = stubs[0].NodeID
			return true
		}
		return false
	})
	return node
}

// Dynamic node metadata end to end, on a server and a separate non-dev
// client: `node meta apply` on the client changes the node the servers
// schedule with before the command returns; a job constrained on the new
// value places there (one that was blocked waiting for it too), a job
// constrained on a configured value that was unset does not; and after
// the client agent restarts the dynamic meta is still the node's.
func TestNodeMetaApplyPlacesAtOnceAndSurvivesRestart(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	cli := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"client": map[string]any{"meta": map[string]string{"rack": "r1"}},
		"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
	})
	var nodeID string
	waitFor(t, 20*time.Second, "client node ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		if err == nil && len(nodes) == 1 && nodes[0].Status == "ready" {
			nodeID = nodes[0].ID
			return true
		}
		return false
	})

	// Waiting for a value no node has yet.
	if _, _, err := srv.client.Jobs().Register(metaJob("waits-for-gpu", "gpu", "a100"), nil); err != nil {
		t.Fatal(err)
	}
	blockedEvalOf(t, srv, "waits-for-gpu")

	dir := t.TempDir()
	if out, code := cli.cli(dir, "node", "meta", "apply", "-node-id", nodeID[:8], "-unset", "rack", "gpu=a100"); code != 0 || out != "" {
		t.Fatalf("node meta apply (%d):\n%s", code, out)
	}
	// No waiting: the servers had the node when the command returned.
	node, _, err := srv.client.Nodes().Info(nodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, has := node.Meta["rack"]; has || node.Meta["gpu"] != "a100" || node.Meta["connect.log_level"] != "info" {
		t.Fatalf("server's node meta right after apply: %v", node.Meta)
	}

	if got := placedOn(t, srv, "waits-for-gpu"); got != nodeID {
		t.Fatalf("blocked job placed on %s", got)
	}
	if _, _, err := srv.client.Jobs().Register(metaJob("gpu", "gpu", "a100"), nil); err != nil {
		t.Fatal(err)
	}
	if got := placedOn(t, srv, "gpu"); got != nodeID {
		t.Fatalf("gpu job placed on %s", got)
	}
	// The configured rack was unset: nothing may place on it.
	if _, _, err := srv.client.Jobs().Register(metaJob("rack", "rack", "r1"), nil); err != nil {
		t.Fatal(err)
	}
	blockedEvalOf(t, srv, "rack")
	if stubs := srv.allocsOf("rack"); len(stubs) != 0 {
		t.Fatalf("job constrained on the unset rack placed: %+v", stubs[0])
	}

	// Restart the client agent on the same data dir and configuration.
	cli.stop()
	cli.start()
	waitFor(t, 30*time.Second, "client meta after restart", func() bool {
		out, code := cli.cli(dir, "node", "meta", "read", "-json")
		if code != 0 {
			return false
		}
		var m api.NodeMetaResponse
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("node meta read -json: %v\n%s", err, out)
		}
		v, unset := m.Dynamic["rack"]
		if m.Meta["gpu"] != "a100" || m.Meta["rack"] != "" || !unset || v != nil || m.Static["rack"] != "r1" {
			t.Fatalf("meta after restart: %+v", m)
		}
		return true
	})
	out, code := cli.cli(dir, "node", "meta", "read")
	if code != 0 || !regexp.MustCompile(`(?m)^gpu += a100$`).MatchString(out) || !regexp.MustCompile(`(?m)^rack = <unset>$`).MatchString(out) {
		t.Fatalf("node meta read (%d):\n%s", code, out)
	}
	waitFor(t, 30*time.Second, "node ready again", func() bool {
		n, _, err := srv.client.Nodes().Info(nodeID, nil)
		return err == nil && n.Status == "ready" && n.Meta["gpu"] == "a100"
	})
	if _, _, err := srv.client.Jobs().Register(metaJob("after-restart", "gpu", "a100"), nil); err != nil {
		t.Fatal(err)
	}
	if got := placedOn(t, srv, "after-restart"); got != nodeID {
		t.Fatalf("job after restart placed on %s", got)
	}
	if stubs := srv.allocsOf("rack"); len(stubs) != 0 {
		t.Fatalf("job constrained on the unset rack placed after restart: %+v", stubs[0])
	}
}
