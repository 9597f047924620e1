package fsm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/events"
)

// Every entry that changes jobs, evals, allocs, deployments or nodes
// publishes one batch at its own index, with one event per changed object
// in Nomad's topics and types; entries of other kinds publish nothing.
func TestApply_PublishesEventsAtEntryIndex(t *testing.T) {
	b := events.NewBroker(100)
	f, err := New(Config{Events: b})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range scenario(t) {
		apply(t, f, l)
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
		var parts []string
		for _, e := range evs {
			if e.Index != idx {
				t.Fatalf("event of batch %d carries index %d", idx, e.Index)
			}
			parts = append(parts, fmt.Sprintf("%s:%s:%s", e.Topic, e.Type, e.Key))
		}
		got = append(got, fmt.Sprintf("%d %s", idx, strings.Join(parts, " ")))
	}
	want := []string{
		"4 Node:NodeRegistration:n1",
		"5 Node:NodeStreamEvent:n1",
		"6 Node:NodeRegistration:n2",
		"7 Node:NodeEligibility:n2",
		"8 Node:NodeDeregistration:n2",
		"9 Job:JobRegistered:web Evaluation:JobRegistered:e1",
		"10 Allocation:PlanResult:a1 Deployment:PlanResult:d1 Evaluation:PlanResult:e1 Job:PlanResult:web",
		"11 Evaluation:EvaluationUpdated:e1",
		"12 Allocation:AllocationUpdated:a1",
		"13 Allocation:AllocationUpdated:a1 Evaluation:AllocationUpdated:e2",
		"14 Job:JobDeregistered:web Evaluation:JobDeregistered:e3",
		"15 Job:JobRegistered:batch",
		"16 Job:JobDeregistered:batch",
		"21 Allocation:PlanResult:a2",
		"22 Job:JobRegistered:scaled",
		"23 NodePool:NodePoolUpserted:gpu NodePool:NodePoolUpserted:tmp",
		"24 NodePool:NodePoolDeleted:tmp",
		"27 Node:NodeRegistration:n3", // creates pool edge, announced by no pool event
		"28 ACLToken:ACLTokenUpserted:root-acc",
		"29 ACLPolicy:ACLPolicyUpserted:ro ACLPolicy:ACLPolicyUpserted:tmp",
		"30 ACLPolicy:ACLPolicyDeleted:tmp",
		"31 ACLRole:ACLRoleUpserted:role-1 ACLRole:ACLRoleUpserted:role-2",
		"32 ACLRole:ACLRoleDeleted:role-2",
		"33 ACLToken:ACLTokenUpserted:t1 ACLToken:ACLTokenUpserted:t2",
		"34 ACLToken:ACLTokenDeleted:t2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("published:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
