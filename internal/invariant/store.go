package invariant

import (
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// FromStore reads nodes, allocations, evaluations and jobs from a state
// snapshot.
func FromStore(s *state.StateSnapshot) (State, error) {
	var out State
	it, err := s.Nodes(nil)
	if err != nil {
		return out, err
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out.Nodes = append(out.Nodes, raw.(*structs.Node))
	}
	if it, err = s.Allocs(nil); err != nil {
		return out, err
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out.Allocs = append(out.Allocs, raw.(*structs.Allocation))
	}
	if it, err = s.Evals(nil); err != nil {
		return out, err
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out.Evals = append(out.Evals, raw.(*structs.Evaluation))
	}
	if it, err = s.Jobs(nil); err != nil {
		return out, err
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out.Jobs = append(out.Jobs, raw.(*structs.Job))
	}
	return out, nil
}
