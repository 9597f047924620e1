package server

import (
	"maps"
	"testing"
	"time"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// A pull's answer reaches a remote client (msgpack over TCP) and an
// in-process one as the same table, and it is refused with the codes the
// client acts on: 404 for a node the servers do not know (the client
// registers again), 403 for a wrong secret, also for a pull that arrives
// with an up-to-date index (it must not park), after the node was given a
// new secret, and after it was removed.
func TestGetClientAllocsAnswersAndRefusals(t *testing.T) {
	s := testServer(t, nil)
	n := testNode(t, s, 4000, 4096)
	evalDone(t, s, register(t, s, testJob("web", 3)).EvalID)
	pool := droverrpc.NewPool(0)
	defer pool.Shutdown()
	pullVia := func(remote bool, nodeID, secret string, min uint64, wait time.Duration) (*structs.NodeClientAllocsResponse, error) {
		var r structs.NodeClientAllocsResponse
		req := &structs.NodeSpecificRequest{NodeID: nodeID, SecretID: secret, ChangedAllocs: true,
			QueryOptions: structs.QueryOptions{MinQueryIndex: min, MaxQueryTime: wait}}
		if remote {
			return &r, pool.Call(s.RPCAddr(), "Node.GetClientAllocs", req, &r)
		}
		return &r, s.RPC("Node.GetClientAllocs", req, &r)
	}
	code := func(err error) int {
		c, _ := structs.ErrorCode(err)
		return c
	}

	allocs, err := s.State().AllocsByNode(nil, n.ID)
	if err != nil || len(allocs) != 3 {
		t.Fatalf("placed %d allocations: %v", len(allocs), err)
	}
	want := map[string]uint64{}
	for _, a := range allocs {
		want[a.ID] = a.AllocModifyIndex
	}
	var index uint64
	for _, remote := range []bool{false, true} {
		r, err := pullVia(remote, n.ID, n.SecretID, 0, 0)
		if err != nil || !maps.Equal(r.Allocs, want) || len(r.Changed) != 3 {
			t.Fatalf("remote %v: answer %v (%d changed), want %v: %v", remote, r.Allocs, len(r.Changed), want, err)
		}
		index = r.Index
		if _, err := pullVia(remote, "no-such-node", n.SecretID, 0, 0); code(err) != 404 {
			t.Fatalf("remote %v: unknown node: %v", remote, err)
		}
		if _, err := pullVia(remote, n.ID, "wrong", 0, 0); code(err) != 403 {
			t.Fatalf("remote %v: wrong secret: %v", remote, err)
		}
		if _, err := pullVia(remote, n.ID, "wrong", index, time.Minute); code(err) != 403 {
			t.Fatalf("remote %v: wrong secret, up to date: %v", remote, err)
		}
	}

	// A new secret (written by the FSM as a re-registration would be)
	// refuses the old one, parked or not.
	st := s.State()
	node, err := st.NodeByID(nil, n.ID)
	if err != nil || node == nil {
		t.Fatal(err)
	}
	renewed := node.Copy()
	renewed.SecretID = "renewed-secret"
	if _, _, err := s.raftApply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: renewed}); err != nil {
		t.Fatal(err)
	}
	if _, err := pullVia(false, n.ID, n.SecretID, index, time.Minute); code(err) != 403 {
		t.Fatalf("old secret after a new one: %v", err)
	}
	if r, err := pullVia(true, n.ID, renewed.SecretID, 0, 0); err != nil || !maps.Equal(r.Allocs, want) {
		t.Fatalf("new secret: %v %v", r.Allocs, err)
	}

	// A removed node is unknown: 404, even to a pull parked before.
	parked := make(chan error, 1)
	go func() {
		_, err := pullVia(false, n.ID, renewed.SecretID, index, time.Minute)
		parked <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if _, _, err := s.raftApply(structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{n.ID}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-parked:
		if code(err) != 404 {
			t.Fatalf("parked pull after the node's removal: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the node's removal did not wake its parked pull")
	}
	if _, err := pullVia(true, n.ID, renewed.SecretID, 0, 0); code(err) != 404 {
		t.Fatalf("removed node: %v", err)
	}
}

// A parked pull wakes for a placement on its node, with the new table and
// the placed allocation, and not for its client's own status updates.
func TestGetClientAllocsWakesOnPlacementOnly(t *testing.T) {
	s := testServer(t, nil)
	n := testNode(t, s, 4000, 4096)
	evalDone(t, s, register(t, s, testJob("first", 1)).EvalID)
	var first structs.NodeClientAllocsResponse
	if err := s.RPC("Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: n.ID, SecretID: n.SecretID}, &first); err != nil || len(first.Allocs) != 1 {
		t.Fatalf("first pull: %v %v", first.Allocs, err)
	}
	type answer struct {
		r   structs.NodeClientAllocsResponse
		err error
	}
	park := func() chan answer {
		out := make(chan answer, 1)
		go func() {
			var a answer
			a.err = s.RPC("Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: n.ID, SecretID: n.SecretID, ChangedAllocs: true,
				QueryOptions: structs.QueryOptions{MinQueryIndex: first.Index, MaxQueryTime: time.Minute}}, &a.r)
			out <- a
		}()
		return out
	}
	woken := park()
	var upd []*structs.Allocation
	for id := range first.Allocs {
		upd = append(upd, &structs.Allocation{ID: id, NodeID: n.ID, ClientStatus: structs.AllocClientStatusRunning})
	}
	var ur structs.GenericResponse
	if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: upd}, &ur); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-woken:
		t.Fatalf("the client's own update woke its pull: %+v %v", a.r, a.err)
	case <-time.After(300 * time.Millisecond):
	}
	evalDone(t, s, register(t, s, testJob("second", 1)).EvalID)
	select {
	case a := <-woken:
		if a.err != nil || len(a.r.Allocs) != 2 || a.r.Index <= first.Index || len(a.r.Changed) != 1 || a.r.Changed[0].JobID != "second" {
			t.Fatalf("pull after the placement: %v (%d changed), index %d: %v", a.r.Allocs, len(a.r.Changed), a.r.Index, a.err)
		}
		for id, idx := range first.Allocs {
			if a.r.Allocs[id] != idx {
				t.Fatalf("the first allocation's index moved: %d -> %d", idx, a.r.Allocs[id])
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the placement did not wake the pull")
	}
}
