package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"
)

// rollingUpdate registers a new version of every job (a task env change,
// which replaces each allocation) once all run, and waits until each job's
// deployment of that version is successful: rolling_seconds is register ->
// the last success. Server CPU over the same span is divided by the
// allocations replaced. While waiting it samples how many allocations of
// the new version are placed but not yet healthy, the rollout's in-flight
// set, which max_parallel bounds per job.
func rollingUpdate(ctx context.Context, c *api.Client, pid int, o options, res *result) error {
	res.MaxParallel = o.MaxParallel
	// The first version's own deployments finish first, so the measured
	// span holds the update alone.
	if err := waitDeployments(ctx, c, o.Jobs, 0, nil); err != nil {
		return fmt.Errorf("first version's deployments: %w", err)
	}
	cpu0, _ := procCPU(pid)
	t0 := time.Now()
	for i := 0; i < o.Jobs; i++ {
		job := benchJob(i, o.Count, o.MaxParallel)
		job.TaskGroups[0].Tasks[0].Env = map[string]string{"BENCH_VERSION": "2"}
		if _, _, err := c.Jobs().Register(job, nil); err != nil {
			return fmt.Errorf("register version 2 of job %d: %w", i, err)
		}
	}
	if err := waitDeployments(ctx, c, o.Jobs, 1, func(d *api.Deployment) {
		for _, g := range d.TaskGroups {
			res.RollingMaxInFlight = max(res.RollingMaxInFlight, g.PlacedAllocs-g.HealthyAllocs)
		}
	}); err != nil {
		return fmt.Errorf("second version's deployments: %w", err)
	}
	res.RollingSeconds = round(time.Since(t0).Seconds(), 3)
	if pid > 0 {
		cpu, _ := procCPU(pid)
		res.RollingCPUPerAlloc = round((cpu-cpu0)*1000/float64(o.Jobs*o.Count), 3)
	}
	return nil
}

// waitDeployments waits until every bench job's deployment of version has
// succeeded, calling sample with each running one it sees.
func waitDeployments(ctx context.Context, c *api.Client, jobs int, version uint64, sample func(*api.Deployment)) error {
	for {
		ds, _, err := c.Deployments().List(nil)
		if err == nil {
			done := 0
			for _, d := range ds {
				if len(d.JobID) < len(jobPrefix) || d.JobID[:len(jobPrefix)] != jobPrefix || d.JobVersion != version {
					continue
				}
				switch d.Status {
				case "successful":
					done++
				case "running":
					if sample != nil {
						sample(d)
					}
				case "failed", "cancelled":
					return fmt.Errorf("deployment %s of %s: %s (%s)", d.ID, d.JobID, d.Status, d.StatusDescription)
				}
			}
			if done >= jobs {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
