package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// A node running an allocation whose group has disconnect { lost_after }
// misses its heartbeats: it becomes disconnected (not down), the
// allocation unknown (not lost), and a replacement runs elsewhere at once
// (replace = true). When the client comes back, the node holds in
// initializing until the client has pushed its allocations, and the
// group's reconcile strategy decides which copy stays: one per strategy.
func TestDisconnectedNodeAndReconcileStrategies(t *testing.T) {
	for _, tc := range []struct {
		strategy     string
		keepOriginal bool
	}{
		{"keep_original", true},
		{"keep_replacement", false},
		{"longest_running", true},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			s := testServer(t, nil)
			a := testNode(t, s, 4000, 8192)
			job := testJob("web", 1)
			hour, replace, strategy := time.Hour, true, tc.strategy
			job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: &hour, Replace: &replace, Reconcile: &strategy}
			evalDone(t, s, register(t, s, job).EvalID)
			fakeClients(t, s, "web")
			orig := liveAllocs(t, s, "web")[0]
			b := testNode(t, s, 4000, 8192)

			// a goes silent past its TTL.
			s.heartbeats.Clear(a.ID)
			if err := s.markNodesDown([]string{a.ID}); err != nil {
				t.Fatal(err)
			}
			if n, _ := s.State().NodeByID(nil, a.ID); n.Status != structs.NodeStatusDisconnected {
				t.Fatalf("silent node is %s, want disconnected", n.Status)
			}
			var repl *structs.Allocation
			waitFor(t, 10*time.Second, "original unknown and a replacement on the other node", func() bool {
				cur, _ := s.State().AllocByID(nil, orig.ID)
				repl = nil
				for _, x := range liveAllocs(t, s, "web") {
					if x.ID != orig.ID && x.NodeID == b.ID {
						repl = x
					}
				}
				return cur.ClientStatus == structs.AllocClientStatusUnknown && repl != nil
			})
			fakeClients(t, s, "web")          // the replacement runs
			time.Sleep(10 * time.Millisecond) // the replacement has run for less time than the original

			// a comes back: initializing until its client pushes.
			heartbeat := func() string {
				var r structs.NodeUpdateResponse
				if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: a.ID, SecretID: a.SecretID,
					Status: structs.NodeStatusReady}, &r); err != nil {
					t.Fatal(err)
				}
				n, _ := s.State().NodeByID(nil, a.ID)
				return n.Status
			}
			if got := heartbeat(); got != structs.NodeStatusInit {
				t.Fatalf("back from disconnected: %s, want initializing", got)
			}
			up := &structs.Allocation{ID: orig.ID, NodeID: a.ID, ClientStatus: structs.AllocClientStatusRunning,
				TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: time.Now().Add(-time.Hour)}}}
			var r structs.GenericResponse
			if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{up}}, &r); err != nil {
				t.Fatal(err)
			}
			if got := heartbeat(); got != structs.NodeStatusReady {
				t.Fatalf("after the push: %s, want ready", got)
			}
			want, lose := orig.ID, repl.ID
			if !tc.keepOriginal {
				want, lose = repl.ID, orig.ID
			}
			waitFor(t, 10*time.Second, fmt.Sprintf("%s kept, %s stopped", want[:8], lose[:8]), func() bool {
				fakeClients(t, s, "web")
				live := liveAllocs(t, s, "web")
				return len(live) == 1 && live[0].ID == want
			})
		})
	}
}

// A node whose allocations do not tolerate a disconnect is marked down and
// its allocations lost, as before.
func TestSilentNodeWithoutDisconnectBlockIsDown(t *testing.T) {
	s := testServer(t, nil)
	a := testNode(t, s, 4000, 8192)
	evalDone(t, s, register(t, s, testJob("web", 1)).EvalID)
	fakeClients(t, s, "web")
	s.heartbeats.Clear(a.ID)
	if err := s.markNodesDown([]string{a.ID}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.State().NodeByID(nil, a.ID); n.Status != structs.NodeStatusDown {
		t.Fatalf("silent node is %s, want down", n.Status)
	}
}
