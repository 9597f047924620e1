package agent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/agent/config"
	"github.com/drover-project/drover/internal/testport"
)

// A client node registers the HTTP address its agent really serves on:
// the official API client sends alloc logs, fs and exec requests (and the
// caller's ACL token) straight to node.HTTPAddr. It was the node's IP with
// port 4646 whatever ports.http said, so on an agent serving elsewhere
// `alloc logs` reached whatever listened on 4646 (another agent answered
// "Unknown allocation" and was handed the token), or fell back slowly.
func TestClientNodeAdvertisesTheAgentsHTTPAddr(t *testing.T) {
	httpPort := testport.MustTake()
	hcl := fmt.Sprintf("bind_addr = \"127.0.0.1\"\nports {\n  http = %d\n  rpc = %d\n  serf = %d\n}\n",
		httpPort, testport.MustTake(), testport.MustTake())
	path := filepath.Join(t.TempDir(), "agent.hcl")
	if err := os.WriteFile(path, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, _, err := config.ParseAgentArgs([]string{"-dev", "-config", path})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, hclog.New(&hclog.LoggerOptions{Output: io.Discard}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	if a.client == nil {
		t.Fatal("the -dev agent runs no client")
	}
	want := "127.0.0.1:" + strconv.Itoa(httpPort)
	if got := a.HTTPAddr(); got != want {
		t.Fatalf("agent serves HTTP on %s, want %s", got, want)
	}
	if got := a.client.Node().HTTPAddr; got != want {
		t.Fatalf("node.HTTPAddr = %q, want the agent's HTTP address %q", got, want)
	}
}
