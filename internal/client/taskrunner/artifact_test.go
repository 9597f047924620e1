package taskrunner

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// artifactServer serves body at /tool and counts the GETs; headers seen
// are kept.
func artifactServer(t *testing.T, body string) (*httptest.Server, *atomic.Int32, *atomic.Value) {
	var n atomic.Int32
	var hdr atomic.Value
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		hdr.Store(r.Header.Clone())
		if !strings.HasPrefix(r.URL.Path, "/tool") {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s, &n, &hdr
}

func eventTypes(st *structs.TaskState) []string {
	var out []string
	for _, e := range st.Events {
		out = append(out, e.Type)
	}
	return out
}

func waitDone(t *testing.T, tr *TaskRunner) {
	t.Helper()
	select {
	case <-tr.WaitCh():
	case <-time.After(20 * time.Second):
		t.Fatal("task did not finish")
	}
}

// The artifact is fetched into the task dir before the start, with the
// task's environment interpolated into the source, destination and
// headers, and a restart of the task does not fetch it again.
func TestArtifactFetchedOnceBeforeStart(t *testing.T) {
	srv, gets, hdr := artifactServer(t, "tool-bytes")
	task := testutil.MockTask("web", map[string]any{"run_for": "10ms", "exit_code": 1})
	task.Meta = map[string]string{"version": "1.2"}
	task.Artifacts = []*structs.TaskArtifact{{
		GetterSource:  new(srv.URL + "/tool-${NOMAD_META_version}"),
		GetterHeaders: map[string]string{"X-Task": "${NOMAD_TASK_NAME}"},
		RelativeDest:  new("local/${NOMAD_TASK_NAME}"),
	}}
	alloc := testutil.Alloc(structs.JobTypeBatch, task)
	alloc.Job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 2, Interval: time.Hour, Delay: time.Millisecond, Mode: structs.RestartPolicyModeFail}
	dir := t.TempDir()
	taskDir := filepath.Join(dir, "web")
	os.MkdirAll(taskDir, 0o755)
	drv := mock.New()
	db := &memDB{}
	tr := New(Config{Alloc: alloc, Task: task, Driver: drv, TaskDir: taskDir, AllocDir: dir, StateDB: db,
		BuildEnv: func(in EnvInput) map[string]string {
			return map[string]string{"NOMAD_META_version": in.Task.Meta["version"], "NOMAD_TASK_NAME": in.Task.Name}
		},
		InterpolateConfig: func(cfg map[string]any, in EnvInput, env map[string]string) map[string]any {
			return interpolateForTest(cfg, env)
		}})
	go tr.Run()
	waitDone(t, tr)
	b, err := os.ReadFile(filepath.Join(taskDir, "local", "web", "tool-1.2"))
	if err != nil || string(b) != "tool-bytes" {
		t.Fatalf("artifact: %q %v", b, err)
	}
	if h := hdr.Load().(http.Header); h.Get("X-Task") != "web" {
		t.Errorf("header X-Task = %q, want the interpolated task name", h.Get("X-Task"))
	}
	if n := drv.StartCount("web"); n != 3 {
		t.Fatalf("started %d times, want 3 (two restarts)", n)
	}
	if gets.Load() != 1 {
		t.Errorf("fetched %d times over three starts, want once", gets.Load())
	}
	st := tr.State()
	types := eventTypes(st)
	if i, j := indexOf(types, structs.TaskDownloadingArtifacts), indexOf(types, structs.TaskStarted); i < 0 || j < i {
		t.Errorf("events %v: want Downloading Artifacts before Started", types)
	}
	db.mu.Lock()
	done := db.local != nil && db.local.ArtifactsDone
	db.mu.Unlock()
	if !done {
		t.Error("ArtifactsDone not persisted")
	}

	// A client that restores the task (not running any more) starts it
	// again without fetching.
	task.Config = map[string]any{"run_for": "10ms"}
	db.mu.Lock()
	ls := *db.local
	db.mu.Unlock()
	ls.Handle = nil
	ts := st
	ts.State = structs.TaskStatePending
	again := New(Config{Alloc: alloc, Task: task, Driver: drv, TaskDir: taskDir, AllocDir: dir, StateDB: &memDB{}})
	again.Restore(ts, &ls)
	go again.Run()
	waitDone(t, again)
	if n := drv.StartCount("web"); n != 4 {
		t.Fatalf("restored task started %d times in all, want 4", n)
	}
	if gets.Load() != 1 {
		t.Errorf("restored task fetched again (%d GETs)", gets.Load())
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// A failed download is a start failure: Failed Artifact Download with the
// reason, restarts under the policy (fetching again each time), then the
// task fails; the driver never starts it.
func TestArtifactFailureRestartsThenFails(t *testing.T) {
	srv, gets, _ := artifactServer(t, "x")
	task := testutil.MockTask("web", map[string]any{"run_for": "1h"})
	task.Artifacts = []*structs.TaskArtifact{{
		GetterSource:  new(srv.URL + "/tool"),
		GetterOptions: map[string]string{"checksum": "sha256:" + strings.Repeat("0", 64)},
	}}
	alloc := testutil.Alloc(structs.JobTypeService, task)
	alloc.Job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: time.Millisecond, Mode: structs.RestartPolicyModeFail}
	taskDir := filepath.Join(t.TempDir(), "web")
	os.MkdirAll(taskDir, 0o755)
	drv := mock.New()
	tr := New(Config{Alloc: alloc, Task: task, Driver: drv, TaskDir: taskDir})
	go tr.Run()
	waitDone(t, tr)
	st := tr.State()
	if st.State != structs.TaskStateDead || !st.Failed {
		t.Fatalf("state %s failed=%v, want dead and failed", st.State, st.Failed)
	}
	if drv.StartCount("web") != 0 {
		t.Error("the task was started without its artifact")
	}
	if gets.Load() != 2 {
		t.Errorf("%d downloads, want 2 (the first and the one restart)", gets.Load())
	}
	if st.Restarts != 1 {
		t.Errorf("Restarts %d, want 1", st.Restarts)
	}
	var failed *structs.TaskEvent
	for _, e := range st.Events {
		if e.Type == structs.TaskArtifactDownloadFailed {
			failed = e
		}
	}
	if failed == nil || !strings.Contains(failed.DownloadError, "checksums did not match") || !strings.Contains(failed.DownloadError, srv.URL+"/tool") {
		t.Fatalf("events %v; Failed Artifact Download %+v", eventTypes(st), failed)
	}
	last := st.Events[len(st.Events)-1]
	if last.Type != structs.TaskNotRestarting {
		t.Errorf("last event %s, want Not Restarting", last.Type)
	}
}

// A kill while the download is retried ends the task at once.
func TestArtifactKillDuringRestartDelay(t *testing.T) {
	srv, _, _ := artifactServer(t, "x")
	task := testutil.MockTask("web", map[string]any{"run_for": "1h"})
	task.Artifacts = []*structs.TaskArtifact{{GetterSource: new(srv.URL + "/missing")}}
	alloc := testutil.Alloc(structs.JobTypeService, task)
	alloc.Job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 5, Interval: time.Hour, Delay: time.Hour, Mode: structs.RestartPolicyModeFail}
	taskDir := filepath.Join(t.TempDir(), "web")
	os.MkdirAll(taskDir, 0o755)
	tr := New(Config{Alloc: alloc, Task: task, Driver: mock.New(), TaskDir: taskDir})
	go tr.Run()
	testutil.WaitFor(t, 10*time.Second, func() error {
		if indexOf(eventTypes(tr.State()), structs.TaskRestarting) < 0 {
			return testutil.Errorf("events %v: want a restart", eventTypes(tr.State()))
		}
		return nil
	})
	tr.Kill("test")
	waitDone(t, tr)
	if st := tr.State(); st.State != structs.TaskStateDead || st.Events[len(st.Events)-1].Type != structs.TaskKilled {
		t.Fatalf("state %s, events %v", st.State, eventTypes(st))
	}
}

// interpolateForTest replaces ${NAME} for names in env in the string
// values (and map[string]string values) of cfg.
func interpolateForTest(cfg map[string]any, env map[string]string) map[string]any {
	rep := func(s string) string {
		for k, v := range env {
			s = strings.ReplaceAll(s, "${"+k+"}", v)
		}
		return s
	}
	out := map[string]any{}
	for k, v := range cfg {
		switch x := v.(type) {
		case string:
			out[k] = rep(x)
		case map[string]string:
			m := map[string]string{}
			for a, b := range x {
				m[a] = rep(b)
			}
			out[k] = m
		default:
			out[k] = v
		}
	}
	return out
}
