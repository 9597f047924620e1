package taskrunner

import "github.com/drover-project/drover/internal/drivers"

// alreadyExited reports the result of a task that had ended on its own when
// a kill arrived: the kill and the exit can be ready together (a client back
// from a disconnection re-attaches to a task that ended meanwhile and finds
// the servers' stop at once), and the driver may deliver the exit a moment
// after it knows of it. The driver's view decides; the result is then
// waited for, since the driver has it.
func (tr *TaskRunner) alreadyExited(waitCh <-chan *drivers.ExitResult) (*drivers.ExitResult, bool) {
	select {
	case res := <-waitCh:
		return res, true
	default:
	}
	st, err := tr.cfg.Driver.InspectTask(tr.taskID)
	if err != nil || st == nil || st.State != drivers.TaskStateExited {
		return nil, false
	}
	select {
	case res := <-waitCh:
		return res, true
	case <-tr.detachCh:
		return nil, false
	}
}

// setExitedBeforeKill records that the last run ended by itself, not by a
// kill; takeExitedBeforeKill reads and clears it.
func (tr *TaskRunner) setExitedBeforeKill() {
	tr.mu.Lock()
	tr.exitedBeforeKill = true
	tr.mu.Unlock()
}

func (tr *TaskRunner) takeExitedBeforeKill() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	v := tr.exitedBeforeKill
	tr.exitedBeforeKill = false
	return v
}
