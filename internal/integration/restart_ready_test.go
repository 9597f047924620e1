package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A restarted server answers nothing from state it has not restored yet:
// from the moment the process starts until it leads with its log replayed,
// reads of a registered node and job (stale ones included) either wait for
// it or fail with "No cluster leader", never 404 or an empty list; and a
// client that stayed up is never told its node is unknown (which would make
// it register again).
func TestRestartedServerNeverDeniesWhatItHas(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	cli := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
	})
	var nodeID string
	waitFor(t, 20*time.Second, "client node ready on the server", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		if err == nil && len(nodes) == 1 && nodes[0].Status == "ready" {
			nodeID = nodes[0].ID
			return true
		}
		return false
	})
	if _, _, err := srv.client.Jobs().Register(rawExecJob("keep", "service", 1, "exec sleep 600"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the job's alloc running", func() bool {
		stubs := srv.allocsOf("keep")
		return len(stubs) == 1 && stubs[0].ClientStatus == "running"
	})

	srv.kill()
	mark := len(cli.out.String())
	srv.start() // same ports, same data dir

	httpc := &http.Client{Timeout: 15 * time.Second}
	get := func(path string) (int, string) {
		resp, err := httpc.Get(srv.url(path))
		if err != nil {
			return 0, err.Error() // not listening yet
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	paths := []string{
		"/v1/node/" + nodeID + "?stale=true",
		"/v1/job/keep?stale=true",
		"/v1/nodes?stale=true",
		"/v1/job/keep/allocations?stale=true",
		"/v1/node/" + nodeID,
	}
	ok := map[string]bool{}
	var noLeader int
	deadline := time.Now().Add(60 * time.Second)
	for len(ok) < len(paths) {
		if time.Now().After(deadline) {
			t.Fatalf("server not answering all of %v after restart; answered %v", paths, ok)
		}
		for _, p := range paths {
			code, body := get(p)
			switch {
			case code == 0:
			case code == 500 && strings.Contains(body, "No cluster leader"):
				noLeader++
			case code == 200:
				if strings.HasPrefix(p, "/v1/nodes") || strings.Contains(p, "/allocations") {
					var list []map[string]any
					if err := json.Unmarshal([]byte(body), &list); err != nil || len(list) != 1 {
						t.Fatalf("GET %s right after restart: %q, want the one registered entry", p, body)
					}
				}
				ok[p] = true
			default:
				t.Fatalf("GET %s right after restart: %d %q", p, code, body)
			}
		}
	}
	t.Logf("server ready after restart; %d answers were No cluster leader", noLeader)

	// The client that stayed up keeps its node: it pulls new work from the
	// restarted server without ever hearing "node not found" (which makes
	// it register again).
	if _, _, err := srv.client.Jobs().Register(rawExecJob("after", "batch", 1, "true"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a job registered after the restart completes on the client", func() bool {
		stubs := srv.allocsOf("after")
		return len(stubs) == 1 && stubs[0].ClientStatus == "complete"
	})
	since := cli.out.String()[mark:]
	for _, bad := range []string{"node not found", "registering again", "node registered"} {
		if strings.Contains(since, bad) {
			t.Fatalf("client saw %q after the server restarted:\n%s", bad, tail(since, 40))
		}
	}
}
