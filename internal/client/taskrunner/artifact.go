package taskrunner

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/drover-project/drover/internal/client/getter"
	"github.com/drover-project/drover/internal/structs"
)

// runArtifacts fetches the task's artifacts (its `artifact` blocks) before
// its first start, after the dispatch payload and the identities. A fetch
// that fails is a start failure: a Failed Artifact Download event says why
// and the task is restarted under its restart policy (fetching again), or
// fails when the policy is spent. Once every artifact is fetched that is
// persisted: restarts of the task and a client that restores it do not
// fetch again. It returns false when Run must return (the task is dead,
// killed during the fetch, or the runner detached).
func (tr *TaskRunner) runArtifacts() bool {
	if len(tr.cfg.Task.Artifacts) == 0 {
		return true
	}
	tr.mu.Lock()
	done := tr.local.ArtifactsDone
	tr.mu.Unlock()
	if done {
		return true
	}
	for {
		err := tr.fetchArtifacts()
		if err == nil {
			tr.mu.Lock()
			tr.local.ArtifactsDone = true
			ls := tr.local
			tr.mu.Unlock()
			tr.persistLocal(&ls)
			return true
		}
		if tr.detached() {
			return false
		}
		if tr.killed() {
			tr.setState(structs.TaskStateDead, tr.newEvent(structs.TaskKilled, "Task successfully killed"))
			return false
		}
		tr.logger.Warn("artifact download failed", "error", err)
		ev := tr.newEvent(structs.TaskArtifactDownloadFailed, "Failed to download artifacts: "+err.Error())
		ev.DownloadError = err.Error()
		tr.appendEvent(ev)
		tr.notify()

		tracker := newRestartTracker(tr.restartPolicy(), tr.jobType(), tr.cfg.Task.Lifecycle)
		tr.restoreTracker(tracker)
		d := tracker.next(tr.now(), false, true)
		tr.saveTracker(tracker)
		if !d.restart {
			ev := tr.newEvent(structs.TaskNotRestarting, d.reason)
			ev.RestartReason = d.reason
			ev.FailsTask = true
			tr.setState(structs.TaskStateDead, ev)
			return false
		}
		ev = tr.newEvent(structs.TaskRestarting, fmt.Sprintf("Task restarting in %s", d.wait))
		ev.RestartReason = d.reason
		ev.StartDelay = int64(d.wait)
		tr.mu.Lock()
		tr.state.Restarts++
		tr.state.LastRestart = tr.now()
		tr.mu.Unlock()
		tr.setState(structs.TaskStatePending, ev)
		if !tr.sleepOrStop(d.wait) {
			return false
		}
	}
}

// sleepOrStop waits d; false (the task then recorded dead when killed)
// when the runner is killed or detached meanwhile.
func (tr *TaskRunner) sleepOrStop(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-tr.killCh:
		tr.setState(structs.TaskStateDead, tr.newEvent(structs.TaskKilled, "Task successfully killed"))
		return false
	case <-tr.detachCh:
		return false
	}
}

// fetchArtifacts records Downloading Artifacts and fetches every artifact
// in order, interpolated with the task's environment. A kill or detach
// cancels the download in progress.
func (tr *TaskRunner) fetchArtifacts() error {
	tr.appendEvent(tr.newEvent(structs.TaskDownloadingArtifacts, "Client is downloading artifacts"))
	tr.notify()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-tr.killCh:
		case <-tr.detachCh:
		case <-ctx.Done():
		}
		cancel()
	}()

	// Downloads a client cut short (it died, or was killed) left behind.
	if left, _ := filepath.Glob(filepath.Join(tr.cfg.TaskDir, ".artifact-*")); len(left) > 0 {
		for _, p := range left {
			os.RemoveAll(p)
		}
	}
	tr.mu.Lock()
	alloc := tr.alloc
	tr.mu.Unlock()
	task := tr.cfg.Task
	in := EnvInput{Alloc: alloc, Task: task, Node: tr.cfg.Node, Region: tr.cfg.Region, AllocDir: tr.cfg.AllocDir, TaskDir: tr.cfg.TaskDir}
	env := tr.cfg.BuildEnv(in)
	var cfg getter.Config
	if tr.cfg.Artifacts != nil {
		cfg = *tr.cfg.Artifacts
	}
	for _, a := range task.Artifacts {
		if a == nil {
			continue
		}
		req := artifactRequest(a)
		req.TaskDir = tr.cfg.TaskDir
		if tr.cfg.InterpolateConfig != nil {
			m := tr.cfg.InterpolateConfig(map[string]any{
				"source": req.Source, "destination": req.Destination,
				"options": req.Options, "headers": req.Headers,
			}, in, env)
			req.Source, _ = m["source"].(string)
			req.Destination, _ = m["destination"].(string)
			req.Options, _ = m["options"].(map[string]string)
			req.Headers, _ = m["headers"].(map[string]string)
		}
		if a.Chown && task.User != "" {
			o, err := lookupOwner(task.User)
			if err != nil {
				return fmt.Errorf("failed to download artifact %q: chown: %v", req.Source, err)
			}
			req.Owner = o
		}
		if _, err := getter.Fetch(ctx, cfg, req); err != nil {
			return fmt.Errorf("failed to download artifact %q: %v", req.Source, err)
		}
	}
	return nil
}

func artifactRequest(a *structs.TaskArtifact) getter.Request {
	r := getter.Request{Options: a.GetterOptions, Headers: a.GetterHeaders}
	if a.GetterSource != nil {
		r.Source = *a.GetterSource
	}
	if a.GetterMode != nil {
		r.Mode = *a.GetterMode
	}
	if a.GetterInsecure != nil {
		r.Insecure = *a.GetterInsecure
	}
	if a.RelativeDest != nil {
		r.Destination = *a.RelativeDest
	}
	return r
}

func lookupOwner(name string) (*getter.Owner, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("user %q has uid %q", name, u.Uid)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("user %q has gid %q", name, u.Gid)
	}
	return &getter.Owner{UID: uid, GID: gid}, nil
}
