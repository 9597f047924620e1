package reconcile

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

var now = time.Unix(1_700_000_000, 0)

func ptr[T any](v T) *T { return &v }

// update is an update strategy with Nomad's defaults and max_parallel mp.
func update(mp, canary int) *structs.UpdateStrategy {
	return &structs.UpdateStrategy{MaxParallel: ptr(mp), Canary: ptr(canary), HealthCheck: ptr("checks"),
		MinHealthyTime: ptr(10 * time.Second), HealthyDeadline: ptr(5 * time.Minute),
		ProgressDeadline: ptr(10 * time.Minute), AutoRevert: ptr(false), AutoPromote: ptr(false)}
}

// testJob is version v of service job "web": one group "g" of count with
// one raw_exec task, the default service reschedule policy and no update
// strategy.
func testJob(count int) *structs.Job { return jobV(1, count) }

func jobV(v uint64, count int, mut ...func(*structs.Job)) *structs.Job {
	j := &structs.Job{ID: "web", Namespace: "default", Type: "service", Priority: 50,
		Version: v, CreateIndex: 5, JobModifyIndex: 10 + v, ModifyIndex: 10 + v,
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: count,
			ReschedulePolicy: structs.DefaultReschedulePolicy("service"),
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/app"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
	for _, m := range mut {
		m(j)
	}
	return j
}

func withUpdate(mp, canary int) func(*structs.Job) {
	return func(j *structs.Job) { j.TaskGroups[0].Update = update(mp, canary) }
}

func withCommand(cmd string) func(*structs.Job) {
	return func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": cmd} }
}

// noResched gives the group a reschedule policy that replaces nothing.
func noResched(j *structs.Job) {
	j.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 0, Unlimited: false}
}

func asBatch(j *structs.Job) {
	j.Type = "batch"
	j.TaskGroups[0].ReschedulePolicy = structs.DefaultReschedulePolicy("batch")
}

// alloc is allocation idx of job on node, with a readable ID.
func alloc(job *structs.Job, idx uint, node, status string) *structs.Allocation {
	return &structs.Allocation{
		ID: fmt.Sprintf("v%d-%d", job.Version, idx), Name: structs.AllocName(job.ID, "g", idx), JobID: job.ID, Job: job,
		Namespace: "default", TaskGroup: "g", NodeID: node, DesiredStatus: "run", ClientStatus: status,
		ModifyTime: now.Add(-time.Hour).UnixNano(),
	}
}

func allocs(job *structs.Job, n int, status string) []*structs.Allocation {
	var out []*structs.Allocation
	for i := 0; i < n; i++ {
		out = append(out, alloc(job, uint(i), "n1", status))
	}
	return out
}

func healthy(a *structs.Allocation, deploymentID string, h bool) *structs.Allocation {
	a.DeploymentID = deploymentID
	a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: ptr(h)}
	return a
}

func failedAt(a *structs.Allocation, t time.Time) *structs.Allocation {
	a.ClientStatus = "failed"
	a.TaskStates = map[string]*structs.TaskState{"t": {State: "dead", Failed: true, FinishedAt: t}}
	return a
}

func deployment(job *structs.Job, status string, st *structs.DeploymentState) *structs.Deployment {
	return &structs.Deployment{ID: "dep", Namespace: "default", JobID: job.ID, JobVersion: job.Version,
		JobCreateIndex: job.CreateIndex, Status: status, TaskGroups: map[string]*structs.DeploymentState{"g": st}}
}

func ids() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("id%d", n) }
}

// summary renders a result in one comparable line; empty parts are left
// out: "place=web.g[1] fresh=2 stop=web.g[0]:lost destructive=... inplace=...
// canary=... later=... disconnect=... reconnect=... deploy=... updates=...".
func summary(r *Result) string {
	var parts []string
	add := func(k string, l []string) {
		if len(l) > 0 {
			sort.Strings(l)
			parts = append(parts, k+"="+strings.Join(l, ","))
		}
	}
	var place, canary, stop, destr, inplace, later, disc, reconn []string
	for _, p := range r.Place {
		if p.Canary && p.PreviousAlloc == nil {
			canary = append(canary, p.Name)
			continue
		}
		e := p.Name
		switch {
		case p.Reschedule:
			e += ":resched"
		case p.Lost:
			e += ":lost"
		}
		if p.Job != nil {
			e += fmt.Sprintf(":v%d", p.Job.Version)
		}
		place = append(place, e)
	}
	fresh := 0
	var freshNames []string
	for _, f := range r.Fresh {
		fresh += f.Count
		for n := range f.Names() {
			freshNames = append(freshNames, n)
			if len(freshNames) > 5 {
				break
			}
		}
	}
	for _, s := range r.Stop {
		e := s.Alloc.Name
		if s.ClientStatus != "" {
			e += ":" + s.ClientStatus
		}
		stop = append(stop, e)
	}
	for _, d := range r.Destructive {
		destr = append(destr, d.Name)
	}
	for _, a := range r.InPlace {
		inplace = append(inplace, a.Name)
	}
	for _, a := range r.AttributeUpdates {
		later = append(later, a.Name)
	}
	for _, a := range r.DisconnectUpdates {
		disc = append(disc, a.Name)
	}
	for _, a := range r.ReconnectUpdates {
		reconn = append(reconn, a.Name)
	}
	add("place", place)
	if fresh > 0 {
		parts = append(parts, fmt.Sprintf("fresh=%d(%s)", fresh, strings.Join(freshNames, ",")))
	}
	add("canary", canary)
	add("stop", stop)
	add("destructive", destr)
	add("inplace", inplace)
	add("later", later)
	add("disconnect", disc)
	add("reconnect", reconn)
	if len(r.FollowupEvals) > 0 {
		parts = append(parts, fmt.Sprintf("evals=%d", len(r.FollowupEvals)))
	}
	if d := r.Deployment; d != nil {
		st := d.TaskGroups["g"]
		e := "deploy=new"
		if st != nil {
			e += fmt.Sprintf("(total %d", st.DesiredTotal)
			if st.DesiredCanaries > 0 {
				e += fmt.Sprintf(" canaries %d", st.DesiredCanaries)
			}
			e += ")"
		}
		parts = append(parts, e)
	}
	var upd []string
	for _, u := range r.DeploymentUpdates {
		upd = append(upd, u.DeploymentID+":"+u.Status)
	}
	add("updates", upd)
	return strings.Join(parts, " ")
}
