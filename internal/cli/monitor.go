package cli

import (
	"fmt"
	"sort"
	"time"

	mcli "github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
)

// monitor follows an evaluation to a terminal status, printing Nomad-style
// progress lines. It returns 0 when everything was placed, 2 when the eval
// failed or some allocations could not be placed, 1 on API errors.
type monitor struct {
	ui      mcli.Ui
	client  *api.Client
	verbose bool
	// wait is the blocking-query wait time; 0 means the api default.
	wait time.Duration
	// deployments, when set, follows the deployment the evaluation worked
	// on once it completes (job run, revert, scale, promote, resume).
	deployments *deploymentMonitor
	// jobModifyIndex is the registration's job modify index (from the
	// register response), for evaluations that do not carry theirs.
	jobModifyIndex uint64
}

// evalMonitor builds the evaluation monitor of a command; withDeployment
// makes it follow the evaluation's deployment to its end, as Nomad's
// monitor does after `job run`.
func (m *Meta) evalMonitor(client *api.Client, verbose, withDeployment bool) *monitor {
	mon := &monitor{ui: m.Ui, client: client, verbose: verbose}
	if withDeployment {
		mon.deployments = m.deploymentMonitor(client, verbose)
	}
	return mon
}

func ts() string { return formatTime(now()) }

func (m *monitor) monitor(evalID string) int {
	m.ui.Info(fmt.Sprintf("==> %s: Monitoring evaluation %q", ts(), shortID(evalID, m.verbose)))
	seenAllocs := map[string]bool{}
	lastStatus := ""
	sawDeployment := false
	var index uint64
	for {
		eval, meta, err := m.client.Evaluations().Info(evalID, &api.QueryOptions{WaitIndex: index, WaitTime: m.wait})
		if err != nil {
			m.ui.Error(fmt.Sprintf("Error reading evaluation: %s", err))
			return 1
		}
		if lastStatus == "" {
			switch {
			case eval.NodeID != "":
				m.ui.Output(fmt.Sprintf("    %s: Evaluation triggered by node %q", ts(), shortID(eval.NodeID, m.verbose)))
			case eval.JobID != "":
				m.ui.Output(fmt.Sprintf("    %s: Evaluation triggered by job %q", ts(), eval.JobID))
			}
			lastStatus = "pending"
		}
		// As Nomad: once the evaluation names the deployment it works in
		// (the scheduler records it when it is done).
		if eval.DeploymentID != "" && !sawDeployment {
			sawDeployment = true
			m.ui.Output(fmt.Sprintf("    %s: Evaluation within deployment: %q", ts(), shortID(eval.DeploymentID, m.verbose)))
		}
		allocs, _, err := m.client.Evaluations().Allocations(evalID, nil)
		if err == nil {
			sort.Slice(allocs, func(i, j int) bool { return allocs[i].Name < allocs[j].Name })
			for _, a := range allocs {
				if seenAllocs[a.ID] {
					continue
				}
				seenAllocs[a.ID] = true
				// An allocation older than the evaluation was updated in
				// place (same ID, tasks kept running); a new one is created.
				verb := "created"
				switch {
				case a.CreateIndex != 0 && a.CreateIndex < eval.CreateIndex:
					verb = "modified"
				case a.DesiredStatus != "" && a.DesiredStatus != "run":
					continue
				}
				m.ui.Output(fmt.Sprintf("    %s: Allocation %q %s: node %q, group %q", ts(),
					shortID(a.ID, m.verbose), verb, shortID(a.NodeID, m.verbose), a.TaskGroup))
			}
		}
		if eval.Status != lastStatus {
			m.ui.Output(fmt.Sprintf("    %s: Evaluation status changed: %q -> %q", ts(), lastStatus, eval.Status))
			lastStatus = eval.Status
		}
		if eval.Status == "pending" || (meta != nil && meta.LastIndex > index && eval.Status == "") {
			if meta != nil && meta.LastIndex > index {
				index = meta.LastIndex
			} else {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		code := m.finish(eval)
		if eval.NextEval != "" && eval.Status == "complete" {
			// As Nomad: the work goes on in the next evaluation (a system
			// job's next rolling-update batch, after its stagger).
			in := ""
			if next, _, err := m.client.Evaluations().Info(eval.NextEval, nil); err == nil && next.WaitUntil.After(now()) {
				in = " in " + next.WaitUntil.Sub(now()).Round(time.Second).String()
			}
			m.ui.Info(fmt.Sprintf("==> %s: Monitoring next evaluation %q%s", ts(), shortID(eval.NextEval, m.verbose), in))
			return m.monitor(eval.NextEval)
		}
		if m.deployments == nil || eval.Status != "complete" {
			return code
		}
		// As Nomad: a deployment decides the exit code, even after
		// placement failures (the blocked evaluation may still place).
		dID := m.deploymentOf(eval)
		if dID == "" {
			return code
		}
		m.ui.Info(fmt.Sprintf("==> %s: Monitoring deployment %q", ts(), shortID(dID, m.verbose)))
		return m.deployments.follow(dID)
	}
}

// deploymentOf is the deployment an evaluation worked on: the one it names,
// else (a scheduler that does not record it) the job's latest deployment
// when it was made for the job modification this evaluation scheduled.
// Batch, system and sysbatch jobs, and service jobs without an update
// strategy, have none.
func (m *monitor) deploymentOf(eval *api.Evaluation) string {
	if eval.DeploymentID != "" {
		return eval.DeploymentID
	}
	modified := eval.JobModifyIndex
	if modified == 0 {
		modified = m.jobModifyIndex
	}
	if eval.Type != "service" || eval.JobID == "" || modified == 0 {
		return ""
	}
	d, _, err := m.client.Jobs().LatestDeployment(eval.JobID, &api.QueryOptions{Namespace: eval.Namespace})
	if err != nil || d == nil || d.ID == "" {
		return ""
	}
	if d.JobSpecModifyIndex == modified || d.JobModifyIndex == modified {
		return d.ID
	}
	return ""
}

func (m *monitor) finish(eval *api.Evaluation) int {
	id := shortID(eval.ID, m.verbose)
	if len(eval.FailedTGAllocs) == 0 {
		m.ui.Info(fmt.Sprintf("==> %s: Evaluation %q finished with status %q", ts(), id, eval.Status))
		if eval.Status == "complete" {
			return 0
		}
		if eval.StatusDescription != "" {
			m.ui.Output("    " + eval.StatusDescription)
		}
		return 2
	}
	m.ui.Info(fmt.Sprintf("==> %s: Evaluation %q finished with status %q but failed to place all allocations:", ts(), id, eval.Status))
	m.ui.Output(formatFailedTGs(eval.FailedTGAllocs, "    "+ts()+": ", "      "))
	if eval.BlockedEval != "" {
		m.ui.Output(fmt.Sprintf("    %s: Evaluation %q waiting for additional capacity to place remainder", ts(), shortID(eval.BlockedEval, m.verbose)))
	}
	return 2
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
