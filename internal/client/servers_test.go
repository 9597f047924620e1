package client

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/structs"
)

// learningRPC is the fake server seen through an RPCer that keeps a server
// list, as the agent's server manager does.
type learningRPC struct {
	*fakeServer
	mu      sync.Mutex
	learned [][]string
}

func (l *learningRPC) SetServers(addrs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.learned = append(l.learned, addrs)
}

// The servers named in heartbeat answers reach the agent's server list, so
// a client configured with one server learns every server of the cluster.
func TestClient_LearnsServersFromHeartbeats(t *testing.T) {
	var l *learningRPC
	tc := newTestClient(t, func(c *Config) {
		fs := c.RPC.(*fakeServer)
		fs.servers = []string{"10.0.0.1:4647", "10.0.0.2:4647", "10.0.0.3:4647"}
		l = &learningRPC{fakeServer: fs}
		c.RPC = l
	})
	tc.waitReady(t)
	testutil.WaitFor(t, 10*time.Second, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, got := range l.learned {
			if slices.Equal(got, []string{"10.0.0.1:4647", "10.0.0.2:4647", "10.0.0.3:4647"}) {
				return nil
			}
		}
		return testutil.Errorf("servers learned: %v", l.learned)
	})
}

// When no server answers for a while (all down, or this node cut off) and
// then one does, the client registers again and sends every allocation's
// state, unchanged ones included: meanwhile the servers may have marked the
// node down and its allocations lost. The allocation keeps running through
// the outage.
func TestClient_ServersBackReregistersAndResendsAllocStates(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "1h"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	sent := func() int { return tc.srv.updatesSent(a.ID, structs.AllocClientStatusRunning) }
	tc.srv.mu.Lock()
	regs, before := tc.srv.regs, 0
	tc.srv.failNext["Node.UpdateStatus"] = 3 // a transport failure, not an answer
	tc.srv.mu.Unlock()
	before = sent()
	testutil.WaitFor(t, 20*time.Second, func() error {
		tc.srv.mu.Lock()
		r, left := tc.srv.regs, tc.srv.failNext["Node.UpdateStatus"]
		tc.srv.mu.Unlock()
		if left > 0 || r <= regs {
			return testutil.Errorf("%d failures left, %d registrations (was %d)", left, r, regs)
		}
		if sent() <= before {
			return testutil.Errorf("running state sent %d times (before %d)", sent(), before)
		}
		return nil
	})
	for _, got := range tc.Allocs() {
		if got.ID == a.ID && got.ClientStatus != structs.AllocClientStatusRunning {
			t.Fatalf("allocation after the outage is %s", got.ClientStatus)
		}
	}
}
