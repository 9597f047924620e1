package scheduler

import (
	"sort"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/nomad/api"
)

// updateJob is mockJob with Nomad's default update block and the given
// max_parallel and canary count.
func updateJob(id string, count, maxParallel, canary int) *structs.Job {
	j := mockJob(id, count)
	u := api.DefaultUpdateStrategy()
	u.MaxParallel, u.Canary = &maxParallel, &canary
	j.TaskGroups[0].Update = u
	j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/v1"}
	return j
}

// reregister stores a changed copy of the job's current version as the
// next version and evaluates it.
func reregister(t *testing.T, h *Harness, id string, change func(*structs.Job)) *structs.Job {
	t.Helper()
	cur, _ := h.State.JobByID(nil, "default", id)
	next := cur.Copy()
	next.JobModifyIndex = 0
	change(next)
	h.State.UpsertJob(next)
	process(t, h, mockEval(next))
	return next
}

// running marks every live allocation of the job running on its client.
func running(h *Harness, jobID string) {
	var w []*structs.Allocation
	for _, a := range liveAllocs(h, jobID) {
		c := *a
		c.ClientStatus = structs.AllocClientStatusRunning
		w = append(w, &c)
	}
	h.State.UpsertAllocs(w...)
}

// markHealthy reports the job's live allocations of its latest deployment
// healthy, as clients and the state store do.
func markHealthy(h *Harness, jobID string) {
	d := h.State.Deployment("default", jobID)
	var w []*structs.Allocation
	for _, a := range liveAllocs(h, jobID) {
		if d == nil || a.DeploymentID != d.ID || a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
			continue
		}
		c := *a
		yes := true
		st := &structs.AllocDeploymentStatus{Healthy: &yes, Timestamp: testNow}
		if a.DeploymentStatus != nil {
			st.Canary = a.DeploymentStatus.Canary
		}
		c.DeploymentStatus = st
		c.ClientStatus = structs.AllocClientStatusRunning
		d.TaskGroups[a.TaskGroup].HealthyAllocs++
		w = append(w, &c)
	}
	h.State.UpsertAllocs(w...)
}

func idsOf(allocs []*structs.Allocation) []string {
	var out []string
	for _, a := range allocs {
		out = append(out, a.ID)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// countStops counts the plan's stops of the job's allocations.
func countStops(p *structs.Plan) int {
	n := 0
	for _, l := range p.NodeUpdate {
		n += len(l)
	}
	return n
}

// job scale 5 → 7 keeps the same 5 allocations (updated in place to the
// new version) and adds 2.
func TestServiceScaleKeepsAllocations(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertNode(mockNode("n2"))
	h.State.UpsertJob(updateJob("web", 5, 1, 0))
	process(t, h, mockEval(updateJob("web", 5, 1, 0)))
	running(h, "web")
	before := idsOf(liveAllocs(h, "web"))
	if len(before) != 5 {
		t.Fatalf("live %d", len(before))
	}

	v2 := reregister(t, h, "web", func(j *structs.Job) { j.TaskGroups[0].Count = 7 })
	if n := countStops(h.Plans[len(h.Plans)-1]); n != 0 {
		t.Fatalf("scaling stopped %d allocations", n)
	}
	after := liveAllocs(h, "web")
	if len(after) != 7 {
		t.Fatalf("live %d, want 7", len(after))
	}
	ids := idsOf(after)
	for _, id := range before {
		if !contains(ids, id) {
			t.Fatalf("allocation %s was replaced: before %v after %v", id, before, ids)
		}
	}
	for _, a := range after {
		if a.Job.Version != v2.Version {
			t.Errorf("%s runs version %d, want %d", a.Name, a.Job.Version, v2.Version)
		}
		if contains(before, a.ID) && a.ClientStatus != structs.AllocClientStatusRunning {
			t.Errorf("in-place update reset %s's client status to %q", a.Name, a.ClientStatus)
		}
	}
	names := map[string]bool{}
	for _, a := range after {
		names[a.Name] = true
	}
	if !names["web.web[5]"] || !names["web.web[6]"] {
		t.Fatalf("new names %v", names)
	}
}

// A change that touches no task (update.max_parallel) is in place.
func TestServiceUpdateBlockChangeInPlace(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertJob(updateJob("web", 3, 1, 0))
	process(t, h, mockEval(updateJob("web", 3, 1, 0)))
	running(h, "web")
	before := liveAllocs(h, "web")

	reregister(t, h, "web", func(j *structs.Job) { *j.TaskGroups[0].Update.MaxParallel = 3 })
	after := liveAllocs(h, "web")
	if got, want := idsOf(after), idsOf(before); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("ids changed: %v -> %v", want, got)
	}
	for i, a := range after {
		if *a.Job.TaskGroups[0].Update.MaxParallel != 3 {
			t.Errorf("%s still on the old version", a.Name)
		}
		// Ports are kept.
		if p, q := a.AllocatedResources.Shared.Ports, before[i].AllocatedResources.Shared.Ports; len(p) != 1 || p[0].Value != q[0].Value {
			t.Errorf("%s ports %v, were %v", a.Name, p, q)
		}
	}
	if n := countStops(h.Plans[len(h.Plans)-1]); n != 0 {
		t.Fatalf("stopped %d", n)
	}
	if err := h.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// A meta change reaches the tasks' environment: the allocations are
// replaced, through a deployment, one at a time (max_parallel 1).
func TestServiceMetaChangeDestructive(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertJob(updateJob("web", 3, 1, 0))
	process(t, h, mockEval(updateJob("web", 3, 1, 0)))
	running(h, "web")
	markHealthy(h, "web")
	first := h.State.Deployment("default", "web")
	before := idsOf(liveAllocs(h, "web"))

	reregister(t, h, "web", func(j *structs.Job) { j.TaskGroups[0].Meta = map[string]string{"k": "v"} })
	p := h.Plans[len(h.Plans)-1]
	placed, stopped := planned(p)
	if len(placed) != 1 || len(stopped) != 1 || placed[0].Name != stopped[0].Name || contains(before, placed[0].ID) {
		t.Fatalf("placed %d stopped %d", len(placed), len(stopped))
	}
	d := h.State.Deployment("default", "web")
	if d == nil || d.ID == first.ID || d.Status != "running" || d.TaskGroups["web"].DesiredTotal != 3 {
		t.Fatalf("deployment %+v", d)
	}
	if placed[0].DeploymentID != d.ID {
		t.Fatalf("placement not in the deployment")
	}
}

// A command change with max_parallel 2 never replaces more than 2 at once:
// the next two go only when the first two are healthy; the deployment
// succeeds when all are.
func TestServiceRollingMaxParallel(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertNode(mockNode("n2"))
	h.State.UpsertJob(updateJob("web", 5, 2, 0))
	process(t, h, mockEval(updateJob("web", 5, 2, 0)))
	running(h, "web")
	markHealthy(h, "web")

	v2 := reregister(t, h, "web", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/v2"} })
	onV2 := func() int {
		n := 0
		for _, a := range liveAllocs(h, "web") {
			if a.Job.Version == v2.Version {
				n++
			}
		}
		return n
	}
	for _, want := range []int{2, 4, 5} {
		if got := onV2(); got != want {
			t.Fatalf("on v2: %d, want %d", got, want)
		}
		if len(liveAllocs(h, "web")) != 5 {
			t.Fatal("count not kept")
		}
		// Nothing more until the replacements are healthy.
		plans := len(h.Plans)
		process(t, h, mockEval(v2))
		if len(h.Plans) != plans || onV2() != want {
			t.Fatalf("replaced more before the replacements were healthy")
		}
		markHealthy(h, "web")
		process(t, h, mockEval(v2))
	}
	if d := h.State.Deployment("default", "web"); d.Status != structs.DeploymentStatusSuccessful {
		t.Fatalf("deployment %s %q", d.Status, d.StatusDescription)
	}
}

// canary 1 places one canary and holds the rest until promotion; then the
// old allocation sharing the canary's name stops and the rest roll.
func TestServiceCanaryHoldsUntilPromotion(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertJob(updateJob("web", 3, 1, 1))
	process(t, h, mockEval(updateJob("web", 3, 1, 1)))
	running(h, "web")
	markHealthy(h, "web")
	old := idsOf(liveAllocs(h, "web"))

	v2 := reregister(t, h, "web", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/v2"} })
	live := liveAllocs(h, "web")
	var canaries []*structs.Allocation
	for _, a := range live {
		if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
			canaries = append(canaries, a)
		}
	}
	if len(live) != 4 || len(canaries) != 1 || canaries[0].Job.Version != v2.Version || canaries[0].Name != "web.web[0]" {
		t.Fatalf("live %d canaries %d", len(live), len(canaries))
	}
	d := h.State.Deployment("default", "web")
	if st := d.TaskGroups["web"]; st.DesiredCanaries != 1 || len(st.PlacedCanaries) != 1 || d.StatusDescription != "Deployment is running but requires manual promotion" {
		t.Fatalf("deployment %+v %+v", d, st)
	}
	markHealthy(h, "web")
	plans := len(h.Plans)
	process(t, h, mockEval(v2))
	if len(h.Plans) != plans {
		t.Fatal("rolled before promotion")
	}

	d.TaskGroups["web"].Promoted = true
	process(t, h, mockEval(v2))
	for i := 0; i < 5 && h.State.Deployment("default", "web").Status == "running"; i++ {
		markHealthy(h, "web")
		process(t, h, mockEval(v2))
	}
	live = liveAllocs(h, "web")
	if len(live) != 3 {
		t.Fatalf("live %d", len(live))
	}
	for _, a := range live {
		if a.Job.Version != v2.Version || contains(old, a.ID) {
			t.Fatalf("%s still old", a.Name)
		}
	}
	if d := h.State.Deployment("default", "web"); d.Status != "successful" {
		t.Fatalf("deployment %s", d.Status)
	}
}

// Two registrations committed in one Raft entry share a JobModifyIndex:
// v1's allocations must not keep running under v2.
func TestServiceVersionsSharingJobModifyIndex(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	v1 := mockJob("web", 2)
	h.State.UpsertJob(v1)
	process(t, h, mockEval(v1))
	running(h, "web")

	v2 := v1.Copy()
	v2.Version = v1.Version + 1
	v2.JobModifyIndex = v1.JobModifyIndex // same entry
	v2.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/v2"}
	h.State.UpsertJob(v2)
	process(t, h, mockEval(v2))
	for _, a := range liveAllocs(h, "web") {
		if a.Job.Version != v2.Version {
			t.Fatalf("%s kept running version %d under %d", a.Name, a.Job.Version, v2.Version)
		}
	}
}

// A failed allocation whose delay has not passed gets a stored follow-up
// evaluation at its reschedule time, and names it.
func TestServiceRescheduleLaterFollowup(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	job := mockJob("web", 1)
	job.TaskGroups[0].ReschedulePolicy = structs.DefaultReschedulePolicy("service")
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	a := liveAllocs(h, "web")[0]
	failed := *a
	failed.ClientStatus = structs.AllocClientStatusFailed
	failed.ModifyTime = testNow.UnixNano()
	h.State.UpsertAllocs(&failed)

	process(t, h, mockEval(job))
	if len(h.CreateEvals) != 1 {
		t.Fatalf("evals %d", len(h.CreateEvals))
	}
	e := h.CreateEvals[0]
	if !e.WaitUntil.Equal(testNow.Add(30*time.Second)) || e.TriggeredBy != structs.EvalTriggerAllocReschedule || e.Status != "pending" {
		t.Fatalf("follow-up %+v", e)
	}
	if got := h.State.Alloc(a.ID); got.FollowupEvalID != e.ID || got.DesiredStatus != "run" {
		t.Fatalf("alloc follow-up %q desired %s", got.FollowupEvalID, got.DesiredStatus)
	}
	// The follow-up evaluation replaces it.
	fe := *e
	s, _ := NewScheduler("service", Config{Clock: func() time.Time { return testNow.Add(31 * time.Second) }}, h.State, h)
	if err := s.Process(&fe); err != nil {
		t.Fatal(err)
	}
	live := liveAllocs(h, "web")
	if len(live) != 1 || live[0].PreviousAllocation != a.ID {
		t.Fatalf("not rescheduled: %+v", live)
	}
}

// A count change updates allocations in place even on a node that is
// draining or ineligible (it keeps what runs there); the new allocation
// goes elsewhere.
func TestServiceScaleInPlaceOnDrainingNode(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertJob(updateJob("web", 2, 1, 0))
	process(t, h, mockEval(updateJob("web", 2, 1, 0)))
	running(h, "web")
	before := idsOf(liveAllocs(h, "web"))
	drained := mockNode("n1")
	drained.DrainStrategy = &structs.DrainStrategy{}
	drained.SchedulingEligibility = structs.NodeSchedulingIneligible
	h.State.UpsertNode(drained)
	h.State.UpsertNode(mockNode("n2"))

	reregister(t, h, "web", func(j *structs.Job) { j.TaskGroups[0].Count = 3 })
	if n := countStops(h.Plans[len(h.Plans)-1]); n != 0 {
		t.Fatalf("stopped %d", n)
	}
	after := liveAllocs(h, "web")
	if len(after) != 3 {
		t.Fatalf("live %d", len(after))
	}
	for _, a := range after {
		if contains(before, a.ID) {
			if a.NodeID != "n1" || a.Job.TaskGroups[0].Count != 3 {
				t.Errorf("%s not updated in place", a.Name)
			}
		} else if a.NodeID != "n2" {
			t.Errorf("new allocation on %s", a.NodeID)
		}
	}
}
