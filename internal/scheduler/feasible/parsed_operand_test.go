package feasible

import (
	"testing"

	"github.com/drover-project/drover/internal/apiconv"
	"github.com/drover-project/drover/internal/jobspec"
	"github.com/drover-project/drover/internal/structs"
)

// TestParsedDefaultOperand follows a constraint and an affinity written
// without an operator from the jobspec (which now writes Operand "=", as
// Nomad's parser does) through the api conversion into the checkers: they
// still mean equality.
func TestParsedDefaultOperand(t *testing.T) {
	src := `job "j" {
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  group "g" {
    affinity {
      attribute = "${meta.rack}"
      value     = "r1"
      weight    = 100
    }
    task "t" {
      driver = "docker"
    }
  }
}`
	parsed, err := jobspec.Parse("j.hcl", []byte(src), jobspec.ParseConfig{})
	if err != nil {
		t.Fatal(err)
	}
	job := apiconv.ApiJobToStructJob(parsed)
	if op := job.Constraints[0].Operand; op != "=" {
		t.Fatalf("constraint operand %q, want =", op)
	}
	tg := job.TaskGroups[0]
	if op := tg.Affinities[0].Operand; op != "=" {
		t.Fatalf("affinity operand %q, want =", op)
	}

	linux, windows := testNode(), testNode()
	windows.ID, windows.Attributes = "node-2", map[string]string{"kernel.name": "windows", "driver.docker": "1"}
	ctx := NewContext(allocState{}, &structs.Plan{}, nil, 1, 1)
	f := NewFeasibilityIterator(ctx, NewSourceIterator(ctx, []*structs.Node{windows, linux}))
	f.SetJob(job)
	f.SetTaskGroup(tg)
	var got []string
	for n := f.Next(); n != nil; n = f.Next() {
		got = append(got, n.ID)
	}
	if len(got) != 1 || got[0] != linux.ID {
		t.Fatalf("feasible nodes %v, want only %s", got, linux.ID)
	}
	if m := ctx.Metrics(); m.ConstraintFiltered["${attr.kernel.name} = linux"] != 1 {
		t.Fatalf("constraint filtered %v", m.ConstraintFiltered)
	}

	for _, c := range []struct {
		rack  string
		score bool
	}{{"r1", true}, {"r2", false}} {
		actx := NewContext(newTestState(), &structs.Plan{}, nil, 1, 1)
		it := &NodeAffinityIterator{ctx: actx, source: rankList(propNode("n-"+c.rack, map[string]string{"rack": c.rack}))}
		it.SetJob(job)
		it.SetTaskGroup(tg)
		s, ok := it.Next().ScoreMap()["node-affinity"]
		if ok != c.score || (ok && s != 1) {
			t.Fatalf("rack %s: affinity score %v (present %v), want present=%v", c.rack, s, ok, c.score)
		}
	}
}
