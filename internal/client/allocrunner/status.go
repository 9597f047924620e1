package allocrunner

import "github.com/drover-project/drover/internal/structs"

// ClientStatus derives an allocation's client status from its task states:
// any failed → failed; else any running → running; else any pending →
// pending; else (all dead) → complete. The description says why.
func ClientStatus(states map[string]*structs.TaskState) (string, string) {
	var failed, running, pending bool
	for _, s := range states {
		switch {
		case s.Failed:
			failed = true
		case s.State == structs.TaskStateRunning:
			running = true
		case s.State == structs.TaskStatePending:
			pending = true
		}
	}
	switch {
	case failed:
		return structs.AllocClientStatusFailed, "Failed tasks"
	case running:
		return structs.AllocClientStatusRunning, "Tasks are running"
	case pending:
		return structs.AllocClientStatusPending, "No tasks have started"
	default:
		return structs.AllocClientStatusComplete, "All tasks have completed"
	}
}
