package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Job updates as an operator meets them, through the official Go client on
// a dev agent with the real client: what each kind of change does to the
// running allocations and their processes, and how a deployment ends.

// pidJob is a service job whose tasks write their PID to dir/<alloc ID>
// and then run args (exec'd, so the PID stays the task's).
func pidJob(id string, count int, dir, then string) *api.Job {
	job := rawExecJob(id, "service", count, `echo $$ > `+dir+`/$NOMAD_ALLOC_ID; `+then)
	job.Update = &api.UpdateStrategy{MaxParallel: ptr(1), MinHealthyTime: ptr(500 * time.Millisecond),
		HealthyDeadline: ptr(20 * time.Second), ProgressDeadline: ptr(40 * time.Second), HealthCheck: ptr("task_states")}
	return job
}

// livePIDs maps each running allocation of the job to its task's PID.
func livePIDs(t *testing.T, a *agent, jobID, dir string, want int) map[string]int {
	t.Helper()
	var out map[string]int
	waitFor(t, 30*time.Second, fmt.Sprintf("%d running allocations of %s with PIDs", want, jobID), func() bool {
		out = map[string]int{}
		for _, s := range a.allocsOf(jobID) {
			if s.ClientStatus != "running" || s.DesiredStatus != "run" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, s.ID))
			if err != nil {
				return false
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || !pidAlive(pid) {
				return false
			}
			out[s.ID] = pid
		}
		return len(out) == want
	})
	return out
}

// latestDeployment waits for the job's deployment of version to reach a
// terminal status and returns it.
func waitDeployment(t *testing.T, a *agent, jobID string, version uint64, status string, d time.Duration) *api.Deployment {
	t.Helper()
	var dep *api.Deployment
	waitFor(t, d, fmt.Sprintf("deployment of %s v%d %s", jobID, version, status), func() bool {
		ds, _, err := a.client.Jobs().Deployments(jobID, false, nil)
		if err != nil {
			return false
		}
		for _, x := range ds {
			if x.JobVersion == version {
				dep = x
				return x.Status == status
			}
		}
		return false
	})
	return dep
}

func registerJob(t *testing.T, a *agent, job *api.Job) {
	t.Helper()
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register %s: %v", *job.ID, err)
	}
}

// A count change places or stops only the difference; a change no task
// sees is applied in place; a meta change reaches the tasks' environment
// and so replaces them, through the deployment.
func TestJobChangesKeepWhatTheyDoNotTouch(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	job := pidJob("web", 5, dir, "exec sleep 600")
	registerJob(t, a, job)
	before := livePIDs(t, a, "web", dir, 5)
	waitDeployment(t, a, "web", 0, "successful", 30*time.Second)

	if _, _, err := a.client.Jobs().Scale("web", "g", ptr(7), "more", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	after := livePIDs(t, a, "web", dir, 7)
	for id, pid := range before {
		if after[id] != pid {
			t.Fatalf("scale 5->7 touched alloc %s (pid %d -> %d)", id, pid, after[id])
		}
	}

	// update.max_parallel is the group's own business: in place.
	job.TaskGroups[0].Count = ptr(7)
	job.Update.MaxParallel = ptr(3)
	registerJob(t, a, job)
	waitFor(t, 30*time.Second, "every allocation on version 2", func() bool {
		for _, s := range a.allocsOf("web") {
			if s.DesiredStatus == "run" && s.JobVersion != 2 {
				return false
			}
		}
		return true
	})
	inPlace := livePIDs(t, a, "web", dir, 7)
	for id, pid := range after {
		if inPlace[id] != pid {
			t.Fatalf("an update.max_parallel change replaced alloc %s (pid %d -> %d)", id, pid, inPlace[id])
		}
	}

	// A meta change is destructive: new allocations, new processes.
	job.Meta = map[string]string{"owner": "ops"}
	registerJob(t, a, job)
	dep := waitDeployment(t, a, "web", 3, "successful", 60*time.Second)
	replaced := livePIDs(t, a, "web", dir, 7)
	for id := range replaced {
		if _, old := inPlace[id]; old {
			t.Fatalf("alloc %s survived a meta change", id)
		}
	}
	if g := dep.TaskGroups["g"]; g == nil || g.DesiredTotal != 7 || g.HealthyAllocs < 7 {
		t.Fatalf("deployment's group state: %+v", g)
	}
}

// A version whose task exits at once fails its deployment; auto_revert
// brings back the last stable version as a new one.
func TestFailedDeploymentRevertsToStable(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	job := pidJob("rev", 2, dir, "exec sleep 600")
	job.Update.AutoRevert = ptr(true)
	job.TaskGroups[0].RestartPolicy = &api.RestartPolicy{Attempts: ptr(0), Mode: ptr("fail")}
	registerJob(t, a, job)
	livePIDs(t, a, "rev", dir, 2)
	waitDeployment(t, a, "rev", 0, "successful", 30*time.Second)
	waitFor(t, 30*time.Second, "version 0 stable", func() bool {
		j, _, err := a.client.Jobs().Info("rev", nil)
		return err == nil && j.Stable != nil && *j.Stable
	})

	bad := pidJob("rev", 2, dir, "exit 3")
	bad.Update.AutoRevert = ptr(true)
	// Without a progress deadline an unhealthy allocation fails the
	// deployment at once (with one it would be replaced until the deadline).
	bad.Update.ProgressDeadline = ptr(time.Duration(0))
	bad.TaskGroups[0].RestartPolicy = job.TaskGroups[0].RestartPolicy
	registerJob(t, a, bad)
	dep := waitDeployment(t, a, "rev", 1, "failed", 60*time.Second)
	if !strings.Contains(strings.ToLower(dep.StatusDescription), "unhealthy") {
		t.Fatalf("failed deployment's description: %q", dep.StatusDescription)
	}
	waitFor(t, 30*time.Second, "version 2 (the revert) running on two allocations", func() bool {
		j, _, err := a.client.Jobs().Info("rev", nil)
		if err != nil || *j.Version != 2 {
			return false
		}
		n := 0
		for _, s := range a.allocsOf("rev") {
			if s.DesiredStatus == "run" && s.ClientStatus == "running" && s.JobVersion == 2 {
				n++
			}
		}
		return n == 2
	})
	j, _, err := a.client.Jobs().Info("rev", nil)
	if err != nil {
		t.Fatal(err)
	}
	args := fmt.Sprint(j.TaskGroups[0].Tasks[0].Config["args"])
	if !strings.Contains(args, "sleep 600") {
		t.Fatalf("reverted job runs %s, want the stable version's command", args)
	}
}

// A deployment that makes no progress within progress_deadline fails.
func TestProgressDeadlineFailsDeployment(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	job := pidJob("slow", 1, dir, "exec sleep 600")
	registerJob(t, a, job)
	livePIDs(t, a, "slow", dir, 1)
	waitDeployment(t, a, "slow", 0, "successful", 30*time.Second)

	// The new version crash-loops every second: never healthy, never
	// finally failed within the deadline.
	loop := pidJob("slow", 1, dir, "sleep 1; exit 1")
	loop.TaskGroups[0].RestartPolicy = &api.RestartPolicy{Attempts: ptr(100), Interval: ptr(time.Hour),
		Delay: ptr(200 * time.Millisecond), Mode: ptr("fail")}
	loop.Update.MinHealthyTime = ptr(2 * time.Second)
	loop.Update.HealthyDeadline = ptr(4 * time.Second)
	loop.Update.ProgressDeadline = ptr(5 * time.Second)
	registerJob(t, a, loop)
	dep := waitDeployment(t, a, "slow", 1, "failed", 60*time.Second)
	if !strings.Contains(strings.ToLower(dep.StatusDescription), "progress deadline") {
		t.Fatalf("failed deployment's description: %q", dep.StatusDescription)
	}
}
