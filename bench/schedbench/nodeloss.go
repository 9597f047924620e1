package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/tools/nodesim/sim"
)

// nodeLoss loses o.LosePercent of the nodes and waits until the server has
// marked every allocation on them lost and replacements run everywhere
// else: recover_seconds is loss -> that moment. It includes the heartbeat
// TTL plus grace the server grants before it declares a node down.
//
// The nodes are picked at random (the same picks for the same fleet), but
// at least one of them holds an allocation: the scheduler packs
// allocations on few nodes, and a small run's random picks could all be
// empty (CI once lost 5 nodes of 20 and measured nothing).
func nodeLoss(ctx context.Context, c *api.Client, ns *sim.Sim, o options, res *result) error {
	n := int(float64(o.Nodes) * o.LosePercent / 100)
	allocs, _, err := c.Allocations().List(nil)
	if err != nil {
		return err
	}
	holding := map[string]int{} // node ID -> running allocations
	for _, a := range allocs {
		if strings.HasPrefix(a.JobID, jobPrefix) && a.ClientStatus == "running" {
			holding[a.NodeID]++
		}
	}
	lostIDs := ns.LoseIDs(pickLost(ns.NodeIDs(), holding, n))
	t0 := time.Now()
	res.LostNodes = len(lostIDs)
	for _, id := range lostIDs {
		res.LostAllocs += holding[id]
	}
	if o.Logf != nil {
		o.Logf("lost %d nodes holding %d allocations (the allocations ran on %d of %d nodes)",
			res.LostNodes, res.LostAllocs, len(holding), o.Nodes)
	}
	want := o.Jobs * o.Count
	_, err = waitLost(ctx, c, res.LostAllocs, want)
	if err != nil {
		return fmt.Errorf("recovering from node loss: %w", err)
	}
	res.RecoverSeconds = round(time.Since(t0).Seconds(), 3)
	return nil
}

func waitLost(ctx context.Context, c *api.Client, lostAllocs, want int) (int, error) {
	for {
		stubs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: jobPrefix})
		if err == nil {
			var lost, running int
			for _, j := range stubs {
				if j.JobSummary == nil {
					continue
				}
				for _, tg := range j.JobSummary.Summary {
					lost += tg.Lost
					running += tg.Running
				}
			}
			if lost >= lostAllocs && running >= want {
				return running, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pickLost picks n of ids at random (seeded: the same picks for the same
// fleet), swapping the last pick for a node in holding when none of the
// picks is.
func pickLost(ids []string, holding map[string]int, n int) []string {
	ids = slices.Clone(ids)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	n = min(n, len(ids))
	picks := ids[:n]
	if n == 0 || slices.ContainsFunc(picks, func(id string) bool { return holding[id] > 0 }) {
		return picks
	}
	for _, id := range ids[n:] {
		if holding[id] > 0 {
			picks[n-1] = id
			break
		}
	}
	return picks
}
