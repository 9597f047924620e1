package scheduler

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// A job stopped (or purged, or scaled to zero) while an allocation has
// failed and waits for its delayed reschedule: that allocation is stopped
// too, as Nomad does (job status shows desired "stop" for every alloc).
// Left desired "run", it was taken for a reschedule when the operator ran
// the job again: nothing was placed until the old reschedule delay passed
// (an hour here), and the new allocation inherited the old failure.
func TestStoppedJobStopsFailedAllocsAndRerunPlacesFresh(t *testing.T) {
	for _, mode := range []string{"stop", "purge", "count0"} {
		t.Run(mode, func(t *testing.T) {
			h := NewHarness()
			h.State.UpsertNode(mockNode("n1"))
			job := mockJob("web", 2)
			job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Unlimited: true,
				Delay: time.Hour, DelayFunction: structs.DelayFunctionConstant}
			h.State.UpsertJob(job)
			process(t, h, mockEval(job))
			live := liveAllocs(h, "web")
			if len(live) != 2 {
				t.Fatalf("setup: %d allocs, want 2", len(live))
			}
			// One fails just now: its reschedule waits an hour.
			failed := *live[1]
			failed.ClientStatus = structs.AllocClientStatusFailed
			failed.ModifyTime = testNow.UnixNano()
			h.State.UpsertAllocs(&failed)
			process(t, h, mockEval(job))

			upd := mockJob("web", 2)
			upd.TaskGroups[0].ReschedulePolicy = job.TaskGroups[0].ReschedulePolicy
			switch mode {
			case "stop":
				upd.Stop = true
				h.State.UpsertJob(upd)
			case "count0":
				upd.TaskGroups[0].Count = 0
				h.State.UpsertJob(upd)
			case "purge":
				h.State.DeleteJob("default", "web")
			}
			process(t, h, mockEval(job))
			for _, a := range []*structs.Allocation{live[0], &failed} {
				got := h.State.Alloc(a.ID)
				if got.DesiredStatus != structs.AllocDesiredStatusStop {
					t.Fatalf("%s (client %s) desired %q after %s, want stop", got.Name, got.ClientStatus, got.DesiredStatus, mode)
				}
			}
			if got := h.State.Alloc(failed.ID).ClientStatus; got != structs.AllocClientStatusFailed {
				t.Fatalf("failed alloc's client status became %q", got)
			}

			// The operator runs the job again: two fresh allocations at once.
			again := mockJob("web", 2)
			again.TaskGroups[0].ReschedulePolicy = job.TaskGroups[0].ReschedulePolicy
			h.State.UpsertJob(again)
			process(t, h, mockEval(again))
			live = liveAllocs(h, "web")
			if len(live) != 2 {
				t.Fatalf("after re-run: %d live allocs, want 2", len(live))
			}
			for _, a := range live {
				if a.PreviousAllocation != "" || a.RescheduleTracker != nil {
					t.Fatalf("%s placed as a reschedule of %s", a.Name, a.PreviousAllocation)
				}
			}
		})
	}
}
