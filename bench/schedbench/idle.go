package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/tools/nodesim/sim"
)

// idle measures what a fleet costs the leader when nothing is scheduled:
// heartbeats (and the clients' long-poll pulls) for o.Idle. With o.Stall it
// then stops the server process (SIGSTOP) for that long, as a GC pause or a
// stuck disk would, resumes it, and watches for one heartbeat TTL plus
// grace: nodes_down_after_stall counts nodes the pause made the leader
// declare down (it must be 0 while the stall is shorter than the grace).
func idle(ctx context.Context, c *api.Client, ns *sim.Sim, pid int, o options, res *result) error {
	st0 := ns.Stats()
	cpu0, _ := procCPU(pid)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(o.Idle):
	}
	cpu1, _ := procCPU(pid)
	st1 := ns.Stats()
	res.IdleSeconds = o.Idle.Seconds()
	res.IdleServerCPUPct = round((cpu1-cpu0)/o.Idle.Seconds()*100, 2)
	res.IdleHeartbeatsPerSec = round(float64(st1.Heartbeats-st0.Heartbeats)/o.Idle.Seconds(), 1)
	if o.Stall <= 0 {
		return nil
	}
	if pid <= 0 {
		return fmt.Errorf("-stall needs the server's pid")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	time.Sleep(o.Stall)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return err
	}
	res.StallSeconds = o.Stall.Seconds()
	worst := 0
	res.NodesDownAfterStall = &worst
	// Long enough for every deadline armed before the stall to pass.
	deadline := time.Now().Add(25 * time.Second)
	for time.Now().Before(deadline) {
		nodes, _, err := c.Nodes().List(nil)
		if err == nil {
			down := 0
			for _, n := range nodes {
				if n.Status != "ready" {
					down++
				}
			}
			worst = max(worst, down)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return nil
}
