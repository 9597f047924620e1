package state

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func boolPtr(b bool) *bool { return &b }

func TestJobStatus_Transitions(t *testing.T) {
	type step struct {
		name string
		do   func(t *testing.T, s *StateStore, job *structs.Job)
		want string
	}
	svc := func(j *structs.Job) {}
	cases := []struct {
		name   string
		mutate func(*structs.Job)
		steps  []step
	}{
		{"service lifecycle", svc, []step{
			{"registered", func(*testing.T, *StateStore, *structs.Job) {}, structs.JobStatusPending},
			{"pending eval", func(t *testing.T, s *StateStore, j *structs.Job) {
				must(t, s.UpsertEvals(20, []*structs.Evaluation{mockEval("e1", j, structs.EvalStatusPending)}))
			}, structs.JobStatusPending},
			{"alloc placed", func(t *testing.T, s *StateStore, j *structs.Job) {
				must(t, s.UpsertAllocs(21, []*structs.Allocation{mockAlloc("a1", "n1", j)}))
			}, structs.JobStatusRunning},
			{"eval complete, alloc running", func(t *testing.T, s *StateStore, j *structs.Job) {
				must(t, s.UpsertEvals(22, []*structs.Evaluation{mockEval("e1", j, structs.EvalStatusComplete)}))
			}, structs.JobStatusRunning},
			{"alloc complete", func(t *testing.T, s *StateStore, j *structs.Job) {
				a := mockAlloc("a1", "n1", j)
				a.ClientStatus = structs.AllocClientStatusComplete
				must(t, s.UpdateAllocsFromClient(23, []*structs.Allocation{a}))
			}, structs.JobStatusDead},
		}},
		{"eval gc leaves job dead", svc, []step{
			{"failed eval", func(t *testing.T, s *StateStore, j *structs.Job) {
				must(t, s.UpsertEvals(20, []*structs.Evaluation{mockEval("e1", j, structs.EvalStatusFailed)}))
			}, structs.JobStatusDead},
			{"gc", func(t *testing.T, s *StateStore, j *structs.Job) { must(t, s.DeleteEval(21, []string{"e1"}, nil)) }, structs.JobStatusDead},
		}},
		{"blocked eval is pending", svc, []step{
			{"blocked", func(t *testing.T, s *StateStore, j *structs.Job) {
				must(t, s.UpsertEvals(20, []*structs.Evaluation{mockEval("e1", j, structs.EvalStatusBlocked)}))
			}, structs.JobStatusPending},
		}},
		{"active deployment is running", svc, []step{
			{"deployment", func(t *testing.T, s *StateStore, j *structs.Job) {
				must(t, s.UpsertDeployment(20, &structs.Deployment{ID: "d1", Namespace: "default", JobID: j.ID,
					JobCreateIndex: j.CreateIndex, Status: structs.DeploymentStatusRunning}))
			}, structs.JobStatusRunning},
			{"deployment done", func(t *testing.T, s *StateStore, j *structs.Job) {
				must(t, s.UpsertDeployment(21, &structs.Deployment{ID: "d1", Namespace: "default", JobID: j.ID,
					JobCreateIndex: j.CreateIndex, Status: structs.DeploymentStatusSuccessful}))
			}, structs.JobStatusPending},
		}},
		{"system job", func(j *structs.Job) { j.Type = structs.JobTypeSystem }, []step{
			{"registered", func(*testing.T, *StateStore, *structs.Job) {}, structs.JobStatusRunning},
			{"stopped", func(t *testing.T, s *StateStore, j *structs.Job) {
				c := *j
				c.Stop = true
				must(t, s.UpsertJob(30, nil, &c))
			}, structs.JobStatusDead},
		}},
		{"periodic parent", func(j *structs.Job) {
			j.Type = structs.JobTypeBatch
			j.Periodic = &structs.PeriodicConfig{Spec: strPtr("*/5 * * * *")}
		}, []step{{"registered", func(*testing.T, *StateStore, *structs.Job) {}, structs.JobStatusRunning}}},
		{"stopped service with stopped allocs", svc, []step{
			{"alloc", func(t *testing.T, s *StateStore, j *structs.Job) {
				must(t, s.UpsertAllocs(20, []*structs.Allocation{mockAlloc("a1", "n1", j)}))
			}, structs.JobStatusRunning},
			{"plan stops alloc", func(t *testing.T, s *StateStore, j *structs.Job) {
				must(t, s.UpsertPlanResults(21, &structs.ApplyPlanResultsRequest{
					AllocsStopped: []*structs.Allocation{{ID: "a1", DesiredStatus: structs.AllocDesiredStatusStop}},
				}))
			}, structs.JobStatusDead},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := testStore(t)
			job := mockJob("j")
			c.mutate(job)
			stored := storedJob(t, s, 10, job)
			for _, st := range c.steps {
				st.do(t, s, stored)
				if got := jobStatusOf(t, s, "j"); got != st.want {
					t.Fatalf("after %q: status %q, want %q", st.name, got, st.want)
				}
			}
		})
	}
}

func strPtr(s string) *string { return &s }

func TestSummary_Counts(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	ev := mockEval("e1", job, structs.EvalStatusComplete)
	ev.QueuedAllocations = map[string]int{"web": 2}
	must(t, s.UpsertEvals(11, []*structs.Evaluation{ev}))
	if got := tgSummary(t, s, "web", "web"); got.Queued != 2 {
		t.Fatalf("queued = %d, want 2", got.Queued)
	}
	must(t, s.UpsertAllocs(12, []*structs.Allocation{mockAlloc("a1", "n1", job), mockAlloc("a2", "n1", job)}))
	if got := tgSummary(t, s, "web", "web"); got.Queued != 0 || got.Starting != 2 {
		t.Fatalf("after placement = %+v", got)
	}
	// A third placement does not take Queued below zero.
	must(t, s.UpsertAllocs(13, []*structs.Allocation{mockAlloc("a3", "n1", job)}))

	steps := []struct {
		id, status string
		want       structs.TaskGroupSummary
	}{
		{"a1", structs.AllocClientStatusRunning, structs.TaskGroupSummary{Starting: 2, Running: 1}},
		{"a2", structs.AllocClientStatusFailed, structs.TaskGroupSummary{Starting: 1, Running: 1, Failed: 1}},
		{"a1", structs.AllocClientStatusComplete, structs.TaskGroupSummary{Starting: 1, Complete: 1, Failed: 1}},
		{"a3", structs.AllocClientStatusUnknown, structs.TaskGroupSummary{Complete: 1, Failed: 1, Unknown: 1}},
		{"a3", structs.AllocClientStatusLost, structs.TaskGroupSummary{Complete: 1, Failed: 1, Lost: 1}},
		{"nope", structs.AllocClientStatusRunning, structs.TaskGroupSummary{Complete: 1, Failed: 1, Lost: 1}},
	}
	for i, st := range steps {
		a := &structs.Allocation{ID: st.id, ClientStatus: st.status}
		must(t, s.UpdateAllocsFromClient(uint64(20+i), []*structs.Allocation{a}))
		if got := tgSummary(t, s, "web", "web"); got != st.want {
			t.Fatalf("step %d (%s->%s): %+v, want %+v", i, st.id, st.status, got, st.want)
		}
	}
}

func TestUpsertAllocs_KeepsClientFields(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertAllocs(11, []*structs.Allocation{mockAlloc("a1", "n1", job)}))
	must(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{
		ID: "a1", ClientStatus: structs.AllocClientStatusRunning, ClientDescription: "tasks running",
		TaskStates:       map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning}},
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: boolPtr(true)},
		NetworkStatus:    &structs.AllocNetworkStatus{Address: "10.0.0.1"},
	}}))

	// The server rewrites the alloc from its (stale) view.
	upd := mockAlloc("a1", "n1", job)
	upd.DesiredDescription = "in-place update"
	upd.Job = nil
	must(t, s.UpsertAllocs(13, []*structs.Allocation{upd}))
	a, _ := s.AllocByID(nil, "a1")
	if a.ClientStatus != structs.AllocClientStatusRunning || a.ClientDescription != "tasks running" ||
		a.TaskStates["t"] == nil || a.DeploymentStatus == nil || a.NetworkStatus == nil {
		t.Fatalf("server write clobbered client fields: %+v", a)
	}
	if a.DesiredDescription != "in-place update" || a.AllocModifyIndex != 13 || a.ModifyIndex != 13 || a.CreateIndex != 11 {
		t.Fatalf("server fields not applied: %+v", a)
	}
	if a.Job == nil {
		t.Fatal("job not re-attached")
	}

	// The server may mark an alloc lost.
	lost := mockAlloc("a1", "n1", job)
	lost.ClientStatus = structs.AllocClientStatusLost
	must(t, s.UpsertAllocs(14, []*structs.Allocation{lost}))
	a, _ = s.AllocByID(nil, "a1")
	if a.ClientStatus != structs.AllocClientStatusLost {
		t.Fatalf("lost not applied: %q", a.ClientStatus)
	}
	if a.TaskStates["t"] == nil {
		t.Fatal("task states dropped")
	}
}

func TestUpdateAllocsFromClient_KeepsServerFields(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	job := storedJob(t, s, 10, mockJob("web"))
	orig := mockAlloc("a1", "n1", job)
	orig.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	must(t, s.UpsertAllocs(11, []*structs.Allocation{orig}))

	now := time.Unix(1700000000, 0)
	must(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{
		ID: "a1", ClientStatus: structs.AllocClientStatusRunning,
		// Fields a client must not be able to change:
		DesiredStatus: structs.AllocDesiredStatusStop, NodeID: "evil", JobID: "other", TaskGroup: "x",
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: boolPtr(true), Timestamp: now},
		ModifyTime:       now.UnixNano(),
	}}))
	a, _ := s.AllocByID(nil, "a1")
	if a.DesiredStatus != structs.AllocDesiredStatusRun || a.NodeID != "n1" || a.JobID != "web" || a.TaskGroup != "web" || a.Job == nil {
		t.Fatalf("client clobbered server fields: %+v", a)
	}
	if a.ClientStatus != structs.AllocClientStatusRunning || a.ModifyIndex != 12 || a.AllocModifyIndex != 11 {
		t.Fatalf("client update: status=%q mi=%d ami=%d", a.ClientStatus, a.ModifyIndex, a.AllocModifyIndex)
	}
	if !a.DeploymentStatus.Canary || a.DeploymentStatus.Healthy == nil || !*a.DeploymentStatus.Healthy {
		t.Fatalf("deployment status = %+v", a.DeploymentStatus)
	}
	n, _ := s.NodeByID(nil, "n1")
	if n.LastAllocUpdateIndex != 5 { // registered (5) with nothing to push
		t.Fatalf("LastAllocUpdateIndex = %d", n.LastAllocUpdateIndex)
	}
	if idx, _ := s.Index("allocs"); idx != 12 {
		t.Fatalf("allocs index = %d", idx)
	}
}

func TestAllocsByNodeTerminal(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	running := mockAlloc("a1", "n1", job)
	done := mockAlloc("a2", "n1", job)
	stopped := mockAlloc("a3", "n1", job)
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	other := mockAlloc("a4", "n2", job)
	must(t, s.UpsertAllocs(11, []*structs.Allocation{running, done, stopped, other}))
	must(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{ID: "a2", ClientStatus: structs.AllocClientStatusComplete}}))

	ids := func(as []*structs.Allocation) map[string]bool {
		m := map[string]bool{}
		for _, a := range as {
			m[a.ID] = true
		}
		return m
	}
	live, _ := s.AllocsByNodeTerminal(nil, "n1", false)
	term, _ := s.AllocsByNodeTerminal(nil, "n1", true)
	if got := ids(live); len(got) != 1 || !got["a1"] {
		t.Fatalf("live = %v", got)
	}
	if got := ids(term); len(got) != 2 || !got["a2"] || !got["a3"] {
		t.Fatalf("terminal = %v", got)
	}
	if all, _ := s.AllocsByNode(nil, "n1"); len(all) != 3 {
		t.Fatalf("AllocsByNode = %d", len(all))
	}
	if byEval, _ := s.AllocsByEval(nil, "eval-a1"); len(byEval) != 1 {
		t.Fatalf("AllocsByEval = %d", len(byEval))
	}
}

func TestUpsertAllocs_PreviousAllocationLink(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertAllocs(11, []*structs.Allocation{mockAlloc("a1", "n1", job)}))
	next := mockAlloc("a2", "n1", job)
	next.PreviousAllocation = "a1"
	must(t, s.UpsertAllocs(12, []*structs.Allocation{next}))
	prev, _ := s.AllocByID(nil, "a1")
	if prev.NextAllocation != "a2" || prev.ModifyIndex != 12 {
		t.Fatalf("previous alloc: next=%q mi=%d", prev.NextAllocation, prev.ModifyIndex)
	}
}

func TestUpsertAllocs_NoJobFails(t *testing.T) {
	s := testStore(t)
	a := mockAlloc("a1", "n1", mockJob("ghost"))
	a.Job = nil
	if err := s.UpsertAllocs(11, []*structs.Allocation{a}); err == nil {
		t.Fatal("alloc without job accepted")
	}
}

func TestAllocPrefixes(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	other := mockJob("web")
	other.Namespace = "prod"
	must(t, s.UpsertNamespaces(9, []*structs.Namespace{{Name: "prod"}}))
	oj := storedJob(t, s, 11, other)
	must(t, s.UpsertAllocs(12, []*structs.Allocation{mockAlloc("aa1", "n1", job), mockAlloc("aa2", "n1", oj), mockAlloc("b1", "n1", job)}))
	for _, c := range []struct {
		ns, prefix string
		want       int
	}{{"default", "aa", 1}, {"*", "aa", 2}, {"prod", "", 1}, {"*", "", 3}} {
		it, err := s.AllocsByIDPrefix(nil, c.ns, c.prefix)
		if got := iterCount(t, it, err); got != c.want {
			t.Errorf("AllocsByIDPrefix(%q,%q) = %d, want %d", c.ns, c.prefix, got, c.want)
		}
	}
	it, err := s.Allocs(nil)
	if n := iterCount(t, it, err); n != 3 {
		t.Errorf("Allocs = %d", n)
	}
}

// AllocsByNode reads a prefix of node_terminal: a node whose ID extends
// another's must not see that node's allocations, and terminal ones count.
func TestAllocsByNode_ExactNode(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertAllocs(11, []*structs.Allocation{
		mockAlloc("a1", "n1", job), mockAlloc("a2", "n1", job), mockAlloc("b1", "n10", job)}))
	must(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{ID: "a2", ClientStatus: structs.AllocClientStatusComplete}}))
	got, err := s.AllocsByNode(nil, "n1")
	must(t, err)
	if len(got) != 2 || got[0].ID != "a1" || got[1].ID != "a2" {
		t.Fatalf("AllocsByNode(n1) = %v", got)
	}
	must(t, s.UpsertNode(13, mockNode("n1")))
	pull, err := s.NodeClientAllocs("n1", 0, false)
	must(t, err)
	if table := pullTable(pull); pull.Node == nil || len(table) != 2 || table["a1"] != 11 || table["a2"] != 11 || pull.Index != 11 ||
		pull.Changed != nil {
		t.Fatalf("NodeClientAllocs(n1) = %+v", pull)
	}
}

// A pull can carry the allocations changed since the client's last pull
// index: those whose AllocModifyIndex is above it, and only when asked.
func TestNodeClientAllocs_Changed(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertAllocs(11, []*structs.Allocation{mockAlloc("a1", "n1", job), mockAlloc("a2", "n1", job)}))
	must(t, s.UpsertAllocs(12, []*structs.Allocation{mockAlloc("a3", "n1", job), mockAlloc("b1", "n2", job)}))
	// A client update does not change AllocModifyIndex: not "changed".
	must(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning}}))
	for _, tc := range []struct {
		after uint64
		want  []string
	}{{0, []string{"a1", "a2", "a3"}}, {11, []string{"a3"}}, {12, nil}} {
		pull, err := s.NodeClientAllocs("n1", tc.after, true)
		must(t, err)
		var got []string
		for _, a := range pull.Changed {
			got = append(got, a.ID)
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, tc.want) || len(pull.All) != 3 || pull.Index != 12 {
			t.Fatalf("changed after %d: %v (pull %+v), want %v", tc.after, got, pull, tc.want)
		}
	}
	pull, err := s.NodeClientAllocs("unknown", 0, true)
	if err != nil || pull.Node != nil || pull.All != nil || pull.Changed != nil {
		t.Fatalf("unknown node: %+v, %v", pull, err)
	}
}

// A client update of many allocs of one job writes its summary once, with
// every transition counted, and frees capacity only where an alloc turned
// client-terminal.
func TestUpdateAllocsFromClient_SummaryAndFreed(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	must(t, s.UpsertNode(6, mockNode("n2")))
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertAllocs(11, []*structs.Allocation{
		mockAlloc("a1", "n1", job), mockAlloc("a2", "n1", job), mockAlloc("a3", "n2", job)}))
	freed, err := s.UpdateAllocsFromClientFreed(12, []*structs.Allocation{
		{ID: "a1", ClientStatus: structs.AllocClientStatusRunning},
		{ID: "a2", ClientStatus: structs.AllocClientStatusFailed},
		{ID: "a3", ClientStatus: structs.AllocClientStatusRunning},
	})
	must(t, err)
	if len(freed) != 1 || freed[0] != "n1" {
		t.Fatalf("freed = %v, want [n1]", freed)
	}
	if tg := tgSummary(t, s, "web", "web"); tg.Running != 2 || tg.Failed != 1 || tg.Starting != 0 {
		t.Fatalf("summary = %+v", tg)
	}
	sum, _ := s.JobSummaryByID(nil, structs.DefaultNamespace, "web")
	if sum.ModifyIndex != 12 {
		t.Fatalf("summary ModifyIndex = %d", sum.ModifyIndex)
	}
	if st := jobStatusOf(t, s, "web"); st != structs.JobStatusRunning {
		t.Fatalf("job status = %s", st)
	}
	// Every alloc done: the job is dead.
	_, err = s.UpdateAllocsFromClientFreed(13, []*structs.Allocation{
		{ID: "a1", ClientStatus: structs.AllocClientStatusComplete},
		{ID: "a3", ClientStatus: structs.AllocClientStatusComplete},
	})
	must(t, err)
	if st := jobStatusOf(t, s, "web"); st != structs.JobStatusDead {
		t.Fatalf("job status = %s", st)
	}
}

// AllocsByEval finds an eval's allocations through its job, and still finds
// them once the eval itself is gone.
func TestAllocsByEval_WithoutIndex(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertEvals(11, []*structs.Evaluation{mockEval("e1", job, structs.EvalStatusComplete)}))
	a1, a2, a3 := mockAlloc("a1", "n1", job), mockAlloc("a2", "n1", job), mockAlloc("a3", "n2", job)
	a1.EvalID, a2.EvalID, a3.EvalID = "e1", "e2", "e1"
	must(t, s.UpsertAllocs(12, []*structs.Allocation{a1, a2, a3}))
	check := func(when string) {
		t.Helper()
		got, err := s.AllocsByEval(nil, "e1")
		must(t, err)
		if len(got) != 2 || got[0].ID != "a1" || got[1].ID != "a3" {
			t.Fatalf("%s: AllocsByEval(e1) = %v", when, got)
		}
	}
	check("eval stored")
	must(t, s.DeleteEval(13, []string{"e1"}, nil))
	check("eval collected")
}

// A client update rewrites its node (and moves the nodes index) only when
// the node's LastAllocUpdateIndex must change the answer of "has the client
// pushed its allocs since its last missed heartbeat".
func TestUpdateAllocsFromClient_NodeWrittenOnlyWhenItMatters(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	must(t, s.UpdateNodeStatus(6, "n1", structs.NodeStatusReady, 1, nil))
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertAllocs(11, []*structs.Allocation{mockAlloc("a1", "n1", job)}))
	update := func(index uint64, status string) {
		t.Helper()
		must(t, s.UpdateAllocsFromClient(index, []*structs.Allocation{{ID: "a1", ClientStatus: status}}))
	}
	check := func(when string, wantLast, wantNodesIndex uint64) {
		t.Helper()
		n, _ := s.NodeByID(nil, "n1")
		idx, _ := s.Index("nodes")
		if n.LastAllocUpdateIndex != wantLast || idx != wantNodesIndex {
			t.Fatalf("%s: LastAllocUpdateIndex = %d, nodes index = %d; want %d, %d", when,
				n.LastAllocUpdateIndex, idx, wantLast, wantNodesIndex)
		}
	}
	// Registered without live allocs: nothing to push, nothing to rewrite.
	check("registered", 5, 6)
	update(12, structs.AllocClientStatusPending)
	check("first update", 5, 6)
	update(13, structs.AllocClientStatusRunning)
	check("second update", 5, 6)

	// A missed heartbeat: the next update must be recorded after it.
	must(t, s.UpdateNodeStatus(20, "n1", structs.NodeStatusDisconnected, 2, nil))
	n, _ := s.NodeByID(nil, "n1")
	if n.LastAllocUpdateIndex > n.LastMissedHeartbeatIndex {
		t.Fatalf("after the miss the node must look un-pushed: last=%d missed=%d", n.LastAllocUpdateIndex, n.LastMissedHeartbeatIndex)
	}
	update(21, structs.AllocClientStatusRunning)
	check("update after the miss", 21, 21)
	update(22, structs.AllocClientStatusRunning)
	check("update after that", 21, 21)

	// A node registered anew while live allocs of its ID remain must push
	// them before it counts as up to date: its first update is recorded.
	must(t, s.DeleteNode(30, []string{"n1"}))
	must(t, s.UpsertNode(31, mockNode("n1")))
	check("re-registered with live allocs", 0, 31)
	update(32, structs.AllocClientStatusRunning)
	check("first update after re-registering", 32, 32)
}
