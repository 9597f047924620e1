package fsm

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

var (
	deployPlacedAt = time.Unix(1000, 0).UTC()
	deployHealthAt = time.Unix(1100, 0).UTC()
	deployPromoAt  = time.Unix(1200, 0).UTC()
)

// deploymentLog is a canary rollout through every deployment entry: a
// canary placed, its desired transition set, its health set, the
// deployment promoted and marked successful; then a new version whose
// allocation is set unhealthy by hand, failing its deployment with a
// rollback to the stable version.
func deploymentLog(t *testing.T) []*raft.Log {
	job := testJob("web")
	job.TaskGroups[0].Count = 2
	planJob := job.Copy()
	planJob.CreateIndex, planJob.ModifyIndex, planJob.JobModifyIndex = 2, 2, 2
	canary := &structs.Allocation{ID: "c1", Namespace: "default", EvalID: "e1", NodeID: "n1", JobID: "web", DeploymentID: "d1",
		TaskGroup: "web", Name: "web.web[0]", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Canary: true}, CreateTime: deployPlacedAt.UnixNano(), ModifyTime: deployPlacedAt.UnixNano()}
	d1 := &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobVersion: 0, JobCreateIndex: 2, Status: structs.DeploymentStatusRunning,
		StatusDescription: "Deployment is running but requires manual promotion",
		TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 2, DesiredCanaries: 1, PlacedCanaries: []string{"c1"},
			AutoRevert: true, ProgressDeadline: 10 * time.Minute}}}

	v1 := testJob("web")
	v1.TaskGroups[0].Count = 2
	v1.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "sleep", "args": []any{"20"}}
	planV1 := v1.Copy()
	planV1.Version, planV1.CreateIndex, planV1.ModifyIndex, planV1.JobModifyIndex = 1, 2, 8, 8
	a2 := &structs.Allocation{ID: "a2", Namespace: "default", EvalID: "e5", NodeID: "n1", JobID: "web", DeploymentID: "d2",
		TaskGroup: "web", Name: "web.web[1]", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		ModifyTime: deployPlacedAt.UnixNano()}
	d2 := &structs.Deployment{ID: "d2", Namespace: "default", JobID: "web", JobVersion: 1, JobCreateIndex: 2, Status: structs.DeploymentStatusRunning,
		TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 2, AutoRevert: true, ProgressDeadline: 10 * time.Minute}}}
	rollback := job.Copy() // version 0's spec

	promoEval := testEval("e4", "web", structs.EvalStatusPending)
	promoEval.CreateTime = deployPromoAt.UnixNano()
	return []*raft.Log{
		entry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n1")}),
		entry(t, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: testEval("e1", "web", structs.EvalStatusPending)}),
		entry(t, 3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: planJob, Alloc: []*structs.Allocation{canary},
			EvalID: "e1", Deployment: d1}),
		entry(t, 4, structs.AllocUpdateDesiredTransitionRequestType, &structs.AllocUpdateDesiredTransitionRequest{
			Allocs: map[string]*structs.DesiredTransition{"c1": {Reschedule: new(true)}, "gone": {Migrate: new(true)}},
			Evals:  []*structs.Evaluation{testEval("e2", "web", structs.EvalStatusPending)}}),
		entry(t, 5, structs.DeploymentAllocHealthRequestType, &structs.ApplyDeploymentAllocHealthRequest{
			DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{DeploymentID: "d1", HealthyAllocationIDs: []string{"c1"}},
			Timestamp:                    deployHealthAt, Eval: testEval("e3", "web", structs.EvalStatusPending)}),
		entry(t, 6, structs.DeploymentPromoteRequestType, &structs.ApplyDeploymentPromoteRequest{
			DeploymentPromoteRequest: structs.DeploymentPromoteRequest{DeploymentID: "d1", All: true}, Eval: promoEval}),
		entry(t, 7, structs.DeploymentStatusUpdateRequestType, &structs.DeploymentStatusUpdateRequest{
			DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: "d1", Status: structs.DeploymentStatusSuccessful,
				StatusDescription: "Deployment completed successfully"}}),
		entry(t, 8, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: v1, Eval: testEval("e5", "web", structs.EvalStatusPending)}),
		entry(t, 9, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: planV1, Alloc: []*structs.Allocation{a2},
			EvalID: "e5", Deployment: d2}),
		entry(t, 10, structs.DeploymentAllocHealthRequestType, &structs.ApplyDeploymentAllocHealthRequest{
			DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{DeploymentID: "d2", UnhealthyAllocationIDs: []string{"a2"}},
			Timestamp:                    deployHealthAt,
			DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: "d2", Status: structs.DeploymentStatusFailed,
				StatusDescription: "Failed due to unhealthy allocations - rolling back to job version 0"},
			Job: rollback, Eval: testEval("e6", "web", structs.EvalStatusPending)}),
	}
}

func TestDeploymentEntries_CanaryRolloutAndRollback(t *testing.T) {
	sink := &recordingSink{}
	f := newFSM(t, sink)
	logs := deploymentLog(t)
	st := f.State()
	applyTo := func(index uint64) {
		t.Helper()
		for _, l := range logs {
			if l.Index == index {
				apply(t, f, l)
			}
		}
	}
	for i := uint64(1); i <= 3; i++ {
		applyTo(i)
	}
	d, _ := st.DeploymentByID(nil, "d1")
	if g := d.TaskGroups["web"]; g.PlacedAllocs != 1 || !g.RequireProgressBy.Equal(deployPlacedAt.Add(10*time.Minute)) {
		t.Fatalf("after placement: %+v", g)
	}

	// 4: desired transition merged, unknown allocation skipped, eval written.
	applyTo(4)
	c1, _ := st.AllocByID(nil, "c1")
	if c1.DesiredTransition.Reschedule == nil || !*c1.DesiredTransition.Reschedule || c1.AllocModifyIndex != 4 || c1.ModifyIndex != 4 {
		t.Fatalf("transition not merged: %+v", c1)
	}
	if e, _ := st.EvalByID(nil, "e2"); e == nil || e.CreateIndex != 4 {
		t.Fatalf("eval e2 = %+v", e)
	}

	// 5: health set by hand counts and moves the progress deadline.
	applyTo(5)
	c1, _ = st.AllocByID(nil, "c1")
	if ds := c1.DeploymentStatus; ds == nil || ds.Healthy == nil || !*ds.Healthy || !ds.Timestamp.Equal(deployHealthAt) || !ds.Canary || ds.ModifyIndex != 5 {
		t.Fatalf("health not set: %+v", c1.DeploymentStatus)
	}
	d, _ = st.DeploymentByID(nil, "d1")
	if g := d.TaskGroups["web"]; g.HealthyAllocs != 1 || !g.RequireProgressBy.Equal(deployHealthAt.Add(10*time.Minute)) {
		t.Fatalf("after health: %+v", g)
	}

	// 6: promoted; the canary is no canary any more; the deadline restarts
	// from the eval's time.
	applyTo(6)
	d, _ = st.DeploymentByID(nil, "d1")
	if g := d.TaskGroups["web"]; !g.Promoted || !g.RequireProgressBy.Equal(deployPromoAt.Add(10*time.Minute)) || d.ModifyIndex != 6 {
		t.Fatalf("after promotion: %+v", g)
	}
	if d.StatusDescription != "Deployment is running" {
		t.Fatalf("description after promotion: %q", d.StatusDescription)
	}
	c1, _ = st.AllocByID(nil, "c1")
	if c1.DeploymentStatus.Canary || c1.AllocModifyIndex != 6 || !*c1.DeploymentStatus.Healthy {
		t.Fatalf("promoted canary: %+v", c1.DeploymentStatus)
	}

	// 7: successful marks version 0 stable.
	applyTo(7)
	if v0, _ := st.JobByIDAndVersion(nil, "default", "web", 0); v0 == nil || !v0.Stable {
		t.Fatalf("version 0 not stable: %+v", v0)
	}
	if j, _ := st.JobByID(nil, "default", "web"); !j.Stable {
		t.Fatal("current job not stable")
	}

	// 8-10: version 1's allocation set unhealthy fails its deployment and
	// registers version 0's spec as version 2.
	sink.reset()
	for i := uint64(8); i <= 10; i++ {
		applyTo(i)
	}
	d2, _ := st.DeploymentByID(nil, "d2")
	if d2.Status != structs.DeploymentStatusFailed || d2.TaskGroups["web"].UnhealthyAllocs != 1 || d2.ModifyIndex != 10 {
		t.Fatalf("d2 = %+v %+v", d2, d2.TaskGroups["web"])
	}
	j, _ := st.JobByID(nil, "default", "web")
	if j.Version != 2 || j.JobModifyIndex != 10 || j.Stable || j.TaskGroups[0].Tasks[0].Config["args"].([]any)[0] != "10" {
		t.Fatalf("rollback job = v%d stable=%v %+v", j.Version, j.Stable, j.TaskGroups[0].Tasks[0].Config)
	}
	if v1, _ := st.JobByIDAndVersion(nil, "default", "web", 1); v1 == nil || v1.Stable {
		t.Fatalf("failed version 1 = %+v", v1)
	}
	if e, _ := st.EvalByID(nil, "e6"); e == nil || e.CreateIndex != 10 {
		t.Fatalf("eval e6 = %+v", e)
	}
	var evals []string
	for _, e := range sink.evals {
		evals = append(evals, e.ID)
	}
	if want := []string{"e5", "e6"}; !reflect.DeepEqual(evals, want) {
		t.Fatalf("sink evals %v, want %v", evals, want)
	}
	if want := []string{"default/web", "default/web"}; !reflect.DeepEqual(sink.jobs, want) {
		t.Fatalf("sink jobs %v, want %v (registration and rollback)", sink.jobs, want)
	}
}

// The log applies the same way twice and survives a snapshot.
func TestDeploymentEntries_DeterministicAndSnapshotted(t *testing.T) {
	a, b := newFSM(t, nil), newFSM(t, &recordingSink{})
	for _, l := range deploymentLog(t) {
		apply(t, a, l)
		apply(t, b, l)
	}
	da := dump(t, a.State())
	if !reflect.DeepEqual(da, dump(t, b.State())) {
		t.Fatal("same log produced different states")
	}
	if !reflect.DeepEqual(da, dump(t, snapshotRestored(t, a).State())) {
		t.Fatal("state differs after snapshot and restore")
	}
	if len(da["deployment"]) != 2 {
		t.Fatalf("%d deployments dumped", len(da["deployment"]))
	}
}

// Refused entries return an error naming the problem and write nothing.
func TestDeploymentEntries_RefusalsWriteNothing(t *testing.T) {
	logs := deploymentLog(t)
	base := func() *FSM {
		f := newFSM(t, nil)
		for _, l := range logs[:3] { // the canary placed, not yet healthy
			apply(t, f, l)
		}
		return f
	}
	e := testEval("ex", "web", structs.EvalStatusPending)
	cases := []struct {
		name string
		mt   structs.MessageType
		msg  any
		want string
	}{
		{"promote unhealthy canary", structs.DeploymentPromoteRequestType, &structs.ApplyDeploymentPromoteRequest{
			DeploymentPromoteRequest: structs.DeploymentPromoteRequest{DeploymentID: "d1", Groups: []string{"web"}}, Eval: e},
			`Task group "web" has 0/1 healthy allocations`},
		{"promote group without canaries", structs.DeploymentPromoteRequestType, &structs.ApplyDeploymentPromoteRequest{
			DeploymentPromoteRequest: structs.DeploymentPromoteRequest{DeploymentID: "d1", Groups: []string{"other"}}, Eval: e},
			"no canaries to promote"},
		{"promote unknown deployment", structs.DeploymentPromoteRequestType, &structs.ApplyDeploymentPromoteRequest{
			DeploymentPromoteRequest: structs.DeploymentPromoteRequest{DeploymentID: "nope", All: true}, Eval: e},
			`deployment "nope" does not exist`},
		{"health of an allocation of no deployment", structs.DeploymentAllocHealthRequestType, &structs.ApplyDeploymentAllocHealthRequest{
			DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{DeploymentID: "d1", HealthyAllocationIDs: []string{"c1", "zz"}},
			Eval:                         e}, `unknown alloc "zz"`},
		{"status of unknown deployment", structs.DeploymentStatusUpdateRequestType, &structs.DeploymentStatusUpdateRequest{
			DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: "nope", Status: structs.DeploymentStatusPaused}, Eval: e},
			`deployment "nope" does not exist`},
		{"status update without update", structs.DeploymentStatusUpdateRequestType, &structs.DeploymentStatusUpdateRequest{Eval: e},
			"without an update"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			before := dump(t, f.State())
			resp := f.Apply(entry(t, 4, tc.mt, tc.msg))
			err, ok := resp.(error)
			if !ok || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("apply = %v, want an error containing %q", resp, tc.want)
			}
			if !reflect.DeepEqual(before, dump(t, f.State())) {
				t.Fatal("a refused entry changed the state")
			}
		})
	}

	// A terminal deployment takes no health, no promotion and no other
	// status (a second fail racing the first cannot roll back again).
	f := base()
	apply(t, f, entry(t, 4, structs.DeploymentStatusUpdateRequestType, &structs.DeploymentStatusUpdateRequest{
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: "d1", Status: structs.DeploymentStatusCancelled}}))
	if resp := f.Apply(entry(t, 5, structs.DeploymentStatusUpdateRequestType, &structs.DeploymentStatusUpdateRequest{
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: "d1", Status: structs.DeploymentStatusFailed},
		Job:              testJob("web")})); resp == nil || !strings.Contains(fmt.Sprint(resp), `has terminal status "cancelled"`) {
		t.Fatalf("status of a cancelled deployment: %v", resp)
	}
	if j, _ := f.State().JobByID(nil, "default", "web"); j.Version != 0 {
		t.Fatalf("refused rollback registered version %d", j.Version)
	}
	if resp := f.Apply(entry(t, 5, structs.DeploymentAllocHealthRequestType, &structs.ApplyDeploymentAllocHealthRequest{
		DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{DeploymentID: "d1", HealthyAllocationIDs: []string{"c1"}}})); resp == nil ||
		!strings.Contains(fmt.Sprint(resp), "terminal") {
		t.Fatalf("health on a cancelled deployment: %v", resp)
	}
	if resp := f.Apply(entry(t, 6, structs.DeploymentPromoteRequestType, &structs.ApplyDeploymentPromoteRequest{
		DeploymentPromoteRequest: structs.DeploymentPromoteRequest{DeploymentID: "d1", All: true}})); resp == nil ||
		!strings.Contains(fmt.Sprint(resp), "can't promote terminal deployment") {
		t.Fatalf("promotion of a cancelled deployment: %v", resp)
	}
}

// Each deployment entry publishes its changes under Nomad's event type.
func TestDeploymentEntries_PublishEvents(t *testing.T) {
	b := events.NewBroker(100)
	f, err := New(Config{Events: b})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range deploymentLog(t) {
		apply(t, f, l)
	}
	sub := b.Subscribe(&events.Request{Namespace: "*", Topics: map[string][]string{"*": {"*"}}})
	got := map[uint64]string{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		idx, evs, err := sub.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		var parts []string
		for _, e := range evs {
			parts = append(parts, fmt.Sprintf("%s:%s:%s", e.Topic, e.Type, e.Key))
		}
		got[idx] = strings.Join(parts, " ")
	}
	want := map[uint64][]string{
		4:  {"Allocation:AllocationUpdateDesiredStatus:c1", "Evaluation:AllocationUpdateDesiredStatus:e2"},
		5:  {"Deployment:DeploymentAllocHealth:d1", "Allocation:DeploymentAllocHealth:c1", "Evaluation:DeploymentAllocHealth:e3"},
		6:  {"Deployment:DeploymentPromotion:d1", "Allocation:DeploymentPromotion:c1", "Evaluation:DeploymentPromotion:e4"},
		7:  {"Deployment:DeploymentStatusUpdate:d1", "Job:DeploymentStatusUpdate:web"},
		10: {"Deployment:DeploymentStatusUpdate:d2", "Job:DeploymentStatusUpdate:web", "Evaluation:DeploymentStatusUpdate:e6"},
	}
	for idx, parts := range want {
		for _, p := range parts {
			if idx == 10 {
				p = strings.Replace(p, "DeploymentStatusUpdate", "DeploymentAllocHealth", 1)
			}
			if !strings.Contains(got[idx], p) {
				t.Errorf("index %d published %q, missing %s", idx, got[idx], p)
			}
		}
	}
}
