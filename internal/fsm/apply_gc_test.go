package fsm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

// The GC entries apply as the state writes say, and the job and node
// removals reach the event stream as Nomad's deregistrations (evaluation,
// allocation and deployment deletions publish nothing).
func TestApply_GCEntries(t *testing.T) {
	b := events.NewBroker(100)
	f, err := New(Config{Events: b})
	if err != nil {
		t.Fatal(err)
	}
	job := testJob("old")
	job.Type = structs.JobTypeBatch
	down := testNode("gone")
	down.Status = structs.NodeStatusDown
	apply(t, f, entry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: down}))
	apply(t, f, entry(t, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job}))
	stored, _ := f.State().JobByID(nil, "default", "old")
	apply(t, f, entry(t, 3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: stored, EvalID: "e1",
		Deployment: &structs.Deployment{ID: "d1", Namespace: "default", JobID: "old", Status: structs.DeploymentStatusSuccessful}}))
	apply(t, f, entry(t, 4, structs.DeploymentDeleteRequestType, &structs.DeploymentDeleteRequest{Deployments: []string{"d1", "unknown"}}))
	apply(t, f, entry(t, 5, structs.JobBatchDeregisterRequestType, &structs.JobBatchDeregisterRequest{Jobs: []*structs.JobBatchDeregisterJob{
		{Namespace: "default", ID: "old", ModifyIndex: stored.ModifyIndex + 100}}}))
	if j, _ := f.State().JobByID(nil, "default", "old"); j == nil {
		t.Fatal("a job written after the collector read it was purged")
	}
	stored, _ = f.State().JobByID(nil, "default", "old")
	apply(t, f, entry(t, 6, structs.JobBatchDeregisterRequestType, &structs.JobBatchDeregisterRequest{Jobs: []*structs.JobBatchDeregisterJob{
		{Namespace: "default", ID: "old", ModifyIndex: stored.ModifyIndex}}}))
	apply(t, f, entry(t, 7, structs.NodeBatchDeregisterRequestType, &structs.NodeBatchDeregisterRequest{NodeIDs: []string{"gone", "unknown"}}))
	apply(t, f, entry(t, 8, structs.ReconcileJobSummariesRequestType, &structs.ReconcileJobSummariesRequest{}))
	st := f.State()
	if d, _ := st.DeploymentByID(nil, "d1"); d != nil {
		t.Error("deployment not deleted")
	}
	if j, _ := st.JobByID(nil, "default", "old"); j != nil {
		t.Error("job not purged")
	}
	if v, _ := st.JobVersionsByID(nil, "default", "old"); len(v) != 0 {
		t.Error("job versions left")
	}
	if s, _ := st.JobSummaryByID(nil, "default", "old"); s != nil {
		t.Error("job summary left")
	}
	if n, _ := st.NodeByID(nil, "gone"); n != nil {
		t.Error("node not removed")
	}

	sub := b.Subscribe(&events.Request{Namespace: "*", Topics: map[string][]string{"*": {"*"}}})
	var got []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		idx, evs, err := sub.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		for _, e := range evs {
			got = append(got, fmt.Sprintf("%d %s:%s:%s", idx, e.Topic, e.Type, e.Key))
		}
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"6 Job:JobDeregistered:old", "7 Node:NodeDeregistration:gone"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in the stream:\n%s", want, all)
		}
	}
	for _, idx := range []string{"4 ", "5 ", "8 "} {
		for _, l := range got {
			if strings.HasPrefix(l, idx) {
				t.Errorf("entry %s published %q", idx, l)
			}
		}
	}
}
