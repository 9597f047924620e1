package feasible

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// countingChecker counts how often the wrapped checker runs.
type countingChecker struct {
	inner Checker
	calls *int
}

func (c countingChecker) Feasible(n *structs.Node) (bool, string) {
	*c.calls++
	return c.inner.Feasible(n)
}

// TestClassCacheBoundsCheckerCalls proves the per-class memo: 1,000 nodes
// in two computed classes cost at most two runs of each class-level
// checker, whatever the checkers decide.
func TestClassCacheBoundsCheckerCalls(t *testing.T) {
	var nodes []*structs.Node
	for i := 0; i < 1000; i++ {
		n := testNode()
		n.ID = fmt.Sprintf("node-%04d", i)
		n.Attributes = map[string]string{"kernel.name": "linux", "driver.exec": "1",
			"unique.hostname": n.ID} // unique.* stays out of the class
		if i%2 == 1 {
			n.Attributes["kernel.name"] = "windows"
		}
		n.ComputeClass()
		nodes = append(nodes, n)
	}
	if nodes[0].ComputedClass == nodes[1].ComputedClass || nodes[0].ComputedClass != nodes[2].ComputedClass {
		t.Fatal("setup: want exactly two computed classes")
	}
	cases := []struct {
		name      string
		jobCons   []*structs.Constraint
		tgCons    []*structs.Constraint
		feasible  int
		maxPerChk int
	}{
		{"all feasible", nil, nil, 1000, 2},
		{"job constraint keeps one class", []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}, nil, 500, 2},
		{"group constraint keeps one class", nil, []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "!=", RTarget: "linux"}}, 500, 2},
		{"distinct_property does not escape", nil, []*structs.Constraint{{LTarget: "${meta.rack}", Operand: OpDistinctProperty}}, 1000, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := NewContext(newTestState(), &structs.Plan{}, nil, 1, 1)
			f := NewFeasibilityIterator(ctx, NewSourceIterator(ctx, nodes))
			var counters []*int
			f.wrap = func(in Checker) Checker {
				n := new(int)
				counters = append(counters, n)
				return countingChecker{inner: in, calls: n}
			}
			f.SetJob(&structs.Job{Constraints: c.jobCons})
			f.SetTaskGroup(&structs.TaskGroup{Name: "g", Constraints: c.tgCons, Tasks: []*structs.Task{{Name: "t", Driver: "exec"}}})
			got := 0
			for n := f.Next(); n != nil; n = f.Next() {
				got++
			}
			if got != c.feasible {
				t.Fatalf("feasible = %d, want %d", got, c.feasible)
			}
			if len(counters) != 3 {
				t.Fatalf("checkers = %d, want 3 (job constraints, drivers, group constraints)", len(counters))
			}
			for i, n := range counters {
				if *n > c.maxPerChk {
					t.Errorf("checker %d ran %d times over 1000 nodes, want <= %d", i, *n, c.maxPerChk)
				}
			}
		})
	}

	// Control: a constraint on a unique property defeats the memo, so the
	// counter does see every node.
	ctx := NewContext(newTestState(), &structs.Plan{}, nil, 1, 1)
	f := NewFeasibilityIterator(ctx, NewSourceIterator(ctx, nodes))
	calls := 0
	f.wrap = func(in Checker) Checker { return countingChecker{inner: in, calls: &calls} }
	f.SetJob(&structs.Job{Constraints: []*structs.Constraint{{LTarget: "${attr.unique.hostname}", Operand: "is_set"}}})
	f.SetTaskGroup(&structs.TaskGroup{Name: "g"})
	for n := f.Next(); n != nil; n = f.Next() {
	}
	if calls < 1000 {
		t.Fatalf("escaped constraint ran %d times, want every node", calls)
	}
}
