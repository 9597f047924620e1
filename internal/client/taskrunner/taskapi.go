package taskrunner

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// The Task API: the agent's HTTP API served to the task on a unix socket
// at secrets/api.sock. A request that carries no token is made with the
// task's default workload identity, so a task reaches what its identity
// grants (its job's variables) without handling a token itself.

// taskAPISocket is the socket's path.
func (tr *TaskRunner) taskAPISocket() string {
	return filepath.Join(tr.cfg.TaskDir, "secrets", "api.sock")
}

// startTaskAPI listens on secrets/api.sock; the returned func stops it.
func (tr *TaskRunner) startTaskAPI() (func(), error) {
	if tr.cfg.TaskAPI == nil {
		return func() {}, nil
	}
	p := tr.taskAPISocket()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	_ = os.Remove(p) // a socket left by a previous run of the task
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, err
	}
	_ = os.Chmod(p, 0o666) // the task may run as another user
	srv := &http.Server{Handler: http.HandlerFunc(tr.serveTaskAPI), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			tr.logger.Warn("task API socket stopped", "error", err)
		}
	}()
	return func() { srv.Close(); os.Remove(p) }, nil
}

func (tr *TaskRunner) serveTaskAPI(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Nomad-Token") == "" && r.Header.Get("Authorization") == "" {
		tr.mu.Lock()
		tok := tr.defaultIdentity
		tr.mu.Unlock()
		if tok != "" {
			r.Header.Set("X-Nomad-Token", tok)
		}
	}
	tr.cfg.TaskAPI.ServeHTTP(w, r)
}
