package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/tools/nodesim/sim"
)

// nodeLoss loses o.LosePercent of the nodes and waits until the server has
// marked every allocation on them lost and replacements run everywhere
// else: recover_seconds is loss -> that moment. It includes the heartbeat
// TTL plus grace the server grants before it declares a node down.
func nodeLoss(ctx context.Context, c *api.Client, ns *sim.Sim, o options, res *result) error {
	n := int(float64(o.Nodes) * o.LosePercent / 100)
	lostIDs := ns.Lose(n)
	t0 := time.Now()
	res.LostNodes = len(lostIDs)
	lost := map[string]bool{}
	for _, id := range lostIDs {
		lost[id] = true
	}
	allocs, _, err := c.Allocations().List(nil)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		if strings.HasPrefix(a.JobID, jobPrefix) && lost[a.NodeID] && a.ClientStatus == "running" {
			res.LostAllocs++
		}
	}
	if o.Logf != nil {
		o.Logf("lost %d nodes holding %d allocations", res.LostNodes, res.LostAllocs)
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
