package server

import (
	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// planExplain turns what the collector saw during a dry run into the
// response's Explain field. ex is nil when the request did not ask.
func planExplain(ex *feasible.Explain, snap *state.StateStore, job *structs.Job, plans []*structs.Plan, all bool) (*structs.PlanExplain, error) {
	if ex == nil {
		return nil, nil
	}
	iter, err := snap.Nodes(nil)
	if err != nil {
		return nil, err
	}
	var nodes []*structs.Node
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		nodes = append(nodes, raw.(*structs.Node))
	}
	return ex.Result(nodes, job, plans, all), nil
}
