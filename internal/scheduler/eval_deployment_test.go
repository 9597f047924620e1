package scheduler

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// An evaluation that works within a deployment says so in its
// DeploymentID, as Nomad's scheduler records it: Nomad's CLI (`nomad job
// run`), like other tools on the API, follows the deployment the
// evaluation names and takes its exit code from it. Without it the real
// CLI printed no deployment and exited 0 on a rollout that then failed.
func TestEvalNamesTheDeploymentItWorkedIn(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	job := updateJob("web", 3, 1, 0)
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	first := h.State.Deployment("default", "web")
	if first == nil {
		t.Fatal("no deployment for the first version")
	}
	if got := lastEval(t, h).DeploymentID; got != first.ID {
		t.Fatalf("registration eval names deployment %q, want %q", got, first.ID)
	}

	// A destructive update: a new deployment, named by the new eval.
	running(h, "web")
	markHealthy(h, "web")
	// The deployment done (successful), a later evaluation of the job
	// (a node update, no active deployment) still names the job's latest
	// deployment, as Nomad's scheduler does; it was left empty.
	done := *h.State.Deployment("default", "web")
	done.Status = structs.DeploymentStatusSuccessful
	h.State.UpsertDeployment(&done)
	e := mockEval(job)
	e.TriggeredBy = structs.EvalTriggerNodeUpdate
	process(t, h, e)
	if got := lastEval(t, h).DeploymentID; got != first.ID {
		t.Fatalf("eval after the deployment succeeded names deployment %q, want the latest %q", got, first.ID)
	}

	v2 := reregister(t, h, "web", func(j *structs.Job) {
		j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/v2"}
	})
	second := h.State.Deployment("default", "web")
	if second == nil || second.ID == first.ID || second.JobVersion != v2.Version {
		t.Fatalf("no new deployment for version %d: %+v", v2.Version, second)
	}
	if got := lastEval(t, h).DeploymentID; got != second.ID {
		t.Fatalf("update eval names deployment %q, want %q", got, second.ID)
	}

	// Another evaluation of the job while that deployment runs (a node
	// update): it works within the same deployment.
	e = mockEval(v2)
	e.TriggeredBy = structs.EvalTriggerNodeUpdate
	process(t, h, e)
	if got := lastEval(t, h).DeploymentID; got != second.ID {
		t.Fatalf("node-update eval names deployment %q, want %q", got, second.ID)
	}

	// A job without update strategy has no deployment to name.
	plain := mockJob("plain", 1)
	h.State.UpsertJob(plain)
	process(t, h, mockEval(plain))
	if got := lastEval(t, h).DeploymentID; got != "" {
		t.Fatalf("eval of a job without deployments names %q", got)
	}
}
