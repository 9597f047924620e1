package fsm

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// `job stop -no-shutdown-delay` marks every allocation of the job its
// client still runs, including those an earlier plain stop already marked
// stop (they may be waiting out an hours-long shutdown_delay; the mark is
// how their client learns to cut it). Allocations the client finished are
// left alone.
func TestApply_JobDeregisterNoShutdownDelayReachesStoppingAllocs(t *testing.T) {
	f := newFSM(t, nil)
	apply(t, f, entry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n1")}))
	apply(t, f, entry(t, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("web")}))
	st := f.State()
	mk := func(id, desired, client string) *structs.Allocation {
		return &structs.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "web", NodeID: "n1",
			Name: "web.web[0]", DesiredStatus: desired, ClientStatus: client}
	}
	if err := st.UpsertAllocs(3, []*structs.Allocation{
		mk("running", "run", "running"),
		mk("stopping", "stop", "running"),
		mk("done", "stop", "complete"),
	}); err != nil {
		t.Fatal(err)
	}
	apply(t, f, entry(t, 4, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "web", NoShutdownDelay: true,
		WriteRequest: structs.WriteRequest{Namespace: "default"}}))
	for id, want := range map[string]bool{"running": true, "stopping": true, "done": false} {
		a, _ := st.AllocByID(nil, id)
		if got := a.DesiredTransition.ShouldIgnoreShutdownDelay(); got != want {
			t.Errorf("alloc %s: NoShutdownDelay %v, want %v", id, got, want)
		}
	}
}
