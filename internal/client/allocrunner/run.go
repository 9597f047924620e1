package allocrunner

import (
	"github.com/drover-project/drover/internal/structs"
)

// Run runs the allocation to the end. Prefer Start; Run blocks.
func (ar *AllocRunner) Run() {
	defer close(ar.waitCh)
	defer ar.releaseCores()
	ar.mu.Lock()
	first := ar.alloc
	ar.mu.Unlock()
	ar.health.observe(first)
	go ar.watchMaxRun(ar.runStart())
	if ar.svc != nil {
		go ar.runServices()
	}
	for _, e := range ar.tasks {
		go e.tr.Run()
	}
	ar.report()

	names := make([]string, 0, len(ar.tasks))
	for _, e := range ar.tasks {
		names = append(names, e.tr.Task().Name)
	}
	if err := ar.dir.Build(names); err != nil {
		for _, e := range ar.tasks {
			ev := e.tr.NewEvent(structs.TaskSetupFailure, "failed to build allocation directory: "+err.Error())
			ev.SetupError = err.Error()
			ev.FailsTask = true
			e.tr.EmitEvent(ev)
			e.tr.Kill("setup failure")
		}
		ar.waitAll(func(*taskEntry) bool { return true })
		return
	}
	if !ar.takeOverPrev(names) && ar.detached() {
		return
	}
	if err := ar.setupNetwork(); err != nil {
		for _, e := range ar.tasks {
			ev := e.tr.NewEvent(structs.TaskSetupFailure, "failed to set up the allocation's network: "+err.Error())
			ev.SetupError = err.Error()
			ev.FailsTask = true
			e.tr.EmitEvent(ev)
			e.tr.Kill("setup failure")
		}
		ar.waitAll(func(*taskEntry) bool { return true })
		ar.teardownNetwork()
		return
	}
	if !ar.hold() {
		return
	}
	ar.mu.Lock()
	terminal := ar.alloc.ServerTerminalStatus()
	ar.mu.Unlock()
	if terminal {
		ar.Kill("alloc desired status is stop")
	}

	// Prestart: every prestart task starts; non-sidecars must all succeed
	// before main tasks start.
	ar.startPhase(phasePrestart, phasePrestartSidecar)
	prestartOK := ar.waitUntil(func() (bool, bool) {
		allDone := true
		for _, e := range ar.tasks {
			if e.phase != phasePrestart {
				continue
			}
			if e.done() && e.failed() {
				return true, false
			}
			if !e.done() {
				allDone = false
			}
		}
		return allDone, true
	})

	if prestartOK && !isClosed(ar.killCh) {
		ar.startPhase(phaseMain)
		ar.watchMain()
	}
	if ar.detached() {
		return
	}

	// Main work is over: stop whatever still runs except poststop tasks,
	// sidecars last.
	reason := "main tasks finished"
	if isClosed(ar.killCh) {
		reason = ar.killReason // Kill's own ordered kill may not have reached every task yet
	}
	ar.killInOrder(reason)
	ar.waitAll(func(e *taskEntry) bool { return e.phase != phasePoststop })

	if !ar.maxRunExceeded() {
		// An allocation out of time does not run its poststop tasks.
		ar.startPhase(phasePoststop)
	}
	ar.waitAll(func(*taskEntry) bool { return true })
	ar.teardownNetwork()
	ar.report()
}

func (ar *AllocRunner) startPhase(phases ...int) {
	for _, e := range ar.tasks {
		for _, p := range phases {
			if e.phase == p {
				e.start()
			}
		}
	}
}

// watchMain waits for the main tasks to finish, starting poststart tasks
// once every main task has started, killing siblings when a leader ends or
// any task (but a poststop one) fails.
func (ar *AllocRunner) watchMain() {
	poststartStarted, siblingsKilled := false, false
	ar.waitUntil(func() (bool, bool) {
		allDone, allStarted := true, true
		var leaderDone bool
		var failedTask string
		for _, e := range ar.tasks {
			if e.phase != phaseMain {
				// A failed sidecar or poststart task fails the allocation:
				// its siblings are stopped too, as in Nomad.
				if e.phase != phasePoststop && e.done() && failedTask == "" && e.failed() {
					failedTask = e.tr.Task().Name
				}
				continue
			}
			st := e.tr.State()
			if st.StartedAt.IsZero() && !e.done() {
				allStarted = false
			}
			if !e.done() {
				allDone = false
				continue
			}
			if e.tr.Task().Leader {
				leaderDone = true
			}
			if st.Failed && failedTask == "" {
				failedTask = e.tr.Task().Name
			}
		}
		if allStarted && !poststartStarted && !isClosed(ar.killCh) {
			poststartStarted = true
			ar.startPhase(phasePoststart)
		}
		// Once the allocation is being stopped, Kill orders the kills.
		if !allDone && !siblingsKilled && !isClosed(ar.killCh) && (leaderDone || failedTask != "") {
			siblingsKilled = true
			reason := "leader task dead"
			for _, e := range ar.tasks {
				if e.phase == phasePoststop || e.done() {
					continue
				}
				if failedTask != "" {
					ev := e.tr.NewEvent(structs.TaskSiblingFailed, "Task's sibling "+failedTask+" failed")
					ev.FailedSibling = failedTask
					e.tr.EmitEvent(ev)
					reason = "sibling task failed"
				} else {
					e.tr.EmitEvent(e.tr.NewEvent(structs.TaskLeaderDead, "Leader Task in Group dead"))
				}
			}
			go ar.killInOrder(reason)
		}
		return allDone, true
	})
}

// waitUntil re-evaluates cond after every task change until it reports
// done; it returns cond's ok value.
func (ar *AllocRunner) waitUntil(cond func() (done, ok bool)) bool {
	for {
		if ar.detached() {
			return false
		}
		if done, ok := cond(); done {
			return ok
		}
		select {
		case <-ar.changeCh:
		case <-ar.detachCh:
		}
	}
}

func (ar *AllocRunner) waitAll(which func(*taskEntry) bool) {
	for _, e := range ar.tasks {
		if which(e) {
			if !isClosed(e.gate) {
				// Never started: it ends without running once killed.
				e.tr.Kill("not started")
			}
			<-e.tr.WaitCh()
		}
	}
}
