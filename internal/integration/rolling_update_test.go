package integration

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Job updates on a dev agent through the official client: a scale keeps
// every allocation and its process and adds the difference; a change of
// the update block is in place (same IDs, same PIDs); a command change
// rolls with max_parallel 2, never more than 2 allocations being replaced
// at once, and the deployment ends successful with every allocation on
// the new version.
func TestRollingUpdatesOnDevAgent(t *testing.T) {
	a := devAgent(t)
	jobs := a.client.Jobs()
	job := rawExecJob("ru", "service", 5, `echo $$ >> "$NOMAD_TASK_DIR/pids"; exec sleep 600`)
	job.TaskGroups[0].Update = &api.UpdateStrategy{MaxParallel: ptr(3), MinHealthyTime: ptr(time.Second)}
	register := func() {
		t.Helper()
		if _, _, err := jobs.Register(job, nil); err != nil {
			t.Fatal(err)
		}
	}
	version := func() uint64 {
		t.Helper()
		j, _, err := jobs.Info("ru", nil)
		if err != nil {
			t.Fatal(err)
		}
		return *j.Version
	}
	settled := func(what string, want int) map[string]int {
		t.Helper()
		v := version()
		waitFor(t, 60*time.Second, what, func() bool {
			d, _, err := jobs.LatestDeployment("ru", nil)
			return err == nil && d != nil && d.JobVersion == v && d.Status == "successful"
		})
		pids := map[string]int{}
		for _, s := range a.allocsOf("ru") {
			if s.DesiredStatus != "run" {
				continue
			}
			p := a.pidsOf(s.ID)
			if s.ClientStatus != "running" || s.JobVersion != v || len(p) != 1 {
				t.Fatalf("%s: %s %s on version %d (want %d), pids %v", what, s.Name, s.ClientStatus, s.JobVersion, v, p)
			}
			pids[s.ID] = p[0]
		}
		if len(pids) != want {
			t.Fatalf("%s: %d allocations, want %d", what, len(pids), want)
		}
		return pids
	}
	register()
	first := settled("first deployment", 5)

	// Scale 5 -> 7.
	if _, _, err := jobs.Scale("ru", "g", ptr(7), "more", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	job.TaskGroups[0].Count = ptr(7)
	scaled := settled("scaled deployment", 7)
	for id, pid := range first {
		if scaled[id] != pid {
			t.Fatalf("scaling replaced %s (pid %d -> %d)", id, pid, scaled[id])
		}
	}

	// update.max_parallel 3 -> 2: in place.
	job.TaskGroups[0].Update.MaxParallel = ptr(2)
	register()
	inPlace := settled("max_parallel change", 7)
	for id, pid := range scaled {
		if inPlace[id] != pid {
			t.Fatalf("max_parallel change replaced %s (pid %d -> %d)", id, pid, inPlace[id])
		}
	}

	// A command change rolls, two at a time.
	job.TaskGroups[0].Tasks[0].Config["args"] = []string{"-c", `echo $$ >> "$NOMAD_TASK_DIR/pids"; exec sleep 601`}
	register()
	v := version()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("the rolling update did not finish")
		}
		allocs, _, err := jobs.Allocations("ru", true, nil)
		if err != nil {
			t.Fatal(err)
		}
		replacing, live := 0, 0
		for _, s := range allocs {
			if s.DesiredStatus != "run" {
				continue
			}
			live++
			if s.JobVersion == v && (s.DeploymentStatus == nil || s.DeploymentStatus.Healthy == nil || !*s.DeploymentStatus.Healthy) {
				replacing++
			}
		}
		if replacing > 2 || live != 7 {
			t.Fatalf("%d allocations being replaced at once (max_parallel 2), %d desired running", replacing, live)
		}
		if d, _, err := jobs.LatestDeployment("ru", nil); err == nil && d != nil && d.JobVersion == v && d.Status == "successful" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	rolled := settled("rolling update", 7)
	for id := range inPlace {
		if _, ok := rolled[id]; ok {
			t.Fatalf("%s was not replaced by the command change", id)
		}
	}
}

// canary 1: a command change places one canary beside the three running
// allocations and waits; promoting the deployment finishes it with every
// allocation on the new version.
func TestCanaryWaitsForPromotionOnDevAgent(t *testing.T) {
	a := devAgent(t)
	jobs := a.client.Jobs()
	job := rawExecJob("can", "service", 3, `exec sleep 600`)
	job.TaskGroups[0].Update = &api.UpdateStrategy{MaxParallel: ptr(1), Canary: ptr(1), MinHealthyTime: ptr(time.Second)}
	if _, _, err := jobs.Register(job, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "first deployment", func() bool {
		d, _, err := jobs.LatestDeployment("can", nil)
		return err == nil && d != nil && d.Status == "successful"
	})
	job.TaskGroups[0].Tasks[0].Config["args"] = []string{"-c", "exec sleep 601"}
	resp, _, err := jobs.Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	var d *api.Deployment
	waitFor(t, 60*time.Second, "a healthy canary", func() bool {
		d, _, err = jobs.LatestDeployment("can", nil)
		if err != nil || d == nil || d.JobModifyIndex < resp.JobModifyIndex {
			return false
		}
		st := d.TaskGroups["g"]
		return st != nil && len(st.PlacedCanaries) == 1 && st.HealthyAllocs == 1
	})
	if d.Status != "running" || d.StatusDescription != "Deployment is running but requires manual promotion" {
		t.Fatalf("deployment %s: %s", d.Status, d.StatusDescription)
	}
	// Held: the three old allocations still run beside the canary.
	old, canaries := 0, 0
	for _, s := range a.allocsOf("can") {
		if s.DesiredStatus != "run" {
			continue
		}
		if s.DeploymentStatus != nil && s.DeploymentStatus.Canary {
			canaries++
		} else if s.JobVersion == 0 {
			old++
		}
	}
	if old != 3 || canaries != 1 {
		t.Fatalf("before promotion: %d old, %d canaries", old, canaries)
	}
	if _, _, err := a.client.Deployments().PromoteAll(d.ID, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the promoted deployment to finish", func() bool {
		got, _, err := a.client.Deployments().Info(d.ID, nil)
		return err == nil && got.Status == "successful"
	})
	live := 0
	for _, s := range a.allocsOf("can") {
		if s.DesiredStatus != "run" {
			continue
		}
		live++
		if s.JobVersion != 1 {
			t.Fatalf("%s still on version %d", s.Name, s.JobVersion)
		}
	}
	if live != 3 {
		t.Fatalf("%d allocations after promotion, want 3", live)
	}
}
