package taskrunner

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/state"
	"github.com/drover-project/drover/internal/client/template"
	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/nomad/api"
)

// varBackend serves variables from memory; a blocking read polls until
// the index passes MinIndex.
type varBackend struct {
	mu    sync.Mutex
	index uint64
	vars  map[string]map[string]string
}

func (b *varBackend) put(path string, items map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.index++
	b.vars[path] = items
}

func (b *varBackend) ReadVar(q template.Query, path string) (*structs.VariableDecrypted, uint64, error) {
	deadline := time.Now().Add(q.MaxWait)
	for {
		b.mu.Lock()
		if q.MinIndex == 0 || b.index > q.MinIndex || time.Now().After(deadline) {
			defer b.mu.Unlock()
			items, ok := b.vars[path]
			if !ok {
				return nil, b.index, nil
			}
			return &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: path}, Items: items}, b.index, nil
		}
		b.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *varBackend) ListVars(template.Query, string) ([]*structs.VariableMetadata, uint64, error) {
	return nil, 1, nil
}

func (b *varBackend) Service(template.Query, string, string) ([]*structs.ServiceRegistration, uint64, error) {
	return nil, 1, nil
}

func (b *varBackend) Services(template.Query) ([]*structs.ServiceRegistrationListStub, uint64, error) {
	return nil, 1, nil
}

func hasEvent(tr *TaskRunner, typ, msg string) bool {
	for _, e := range tr.State().Events {
		if e.Type == typ && strings.Contains(e.DisplayMessage, msg) {
			return true
		}
	}
	return false
}

func templateTask(t *testing.T) (*structs.Task, *structs.Allocation, string, string) {
	task := testutil.MockTask("web", map[string]any{"run_for": "1h"})
	dest, data, zero := "local/app.conf", `a={{ with nomadVar "nomad/jobs/app" }}{{ .a }}{{ end }}`, time.Duration(0)
	task.Templates = []*structs.Template{{DestPath: &dest, EmbeddedTmpl: &data, Splay: &zero}}
	alloc := testutil.Alloc(structs.JobTypeService, task)
	allocDir := t.TempDir()
	taskDir := filepath.Join(allocDir, "web")
	if err := os.MkdirAll(filepath.Join(taskDir, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	return task, alloc, allocDir, taskDir
}

// A task whose template reads a missing variable is not started (a
// Missing event says why) until the variable is put; it then starts with
// the file rendered.
func TestTemplateMissingVariableHoldsTheStart(t *testing.T) {
	task, alloc, allocDir, taskDir := templateTask(t)
	be := &varBackend{index: 5, vars: map[string]map[string]string{}}
	drv := mock.New()
	tr := New(Config{Alloc: alloc, Task: task, Driver: drv, AllocDir: allocDir, TaskDir: taskDir, Templates: be})
	go tr.Run()
	t.Cleanup(func() { tr.Kill("test"); <-tr.WaitCh() })
	testutil.WaitFor(t, 10*time.Second, func() error {
		if !hasEvent(tr, TaskTemplate, "Missing: nomad.var.block(nomad/jobs/app@default.") {
			return testutil.Errorf("no Missing event: %v", tr.State().Events)
		}
		return nil
	})
	if n := drv.StartCount("web"); n != 0 || tr.State().State != structs.TaskStatePending {
		t.Fatalf("the task started (%d, %s) without its variable", n, tr.State().State)
	}
	be.put("nomad/jobs/app", map[string]string{"a": "1"})
	testutil.WaitFor(t, 10*time.Second, func() error {
		if drv.StartCount("web") != 1 {
			return testutil.Errorf("not started")
		}
		return nil
	})
	if b, _ := os.ReadFile(filepath.Join(taskDir, "local/app.conf")); string(b) != "a=1" {
		t.Fatalf("file %q", b)
	}
}

// A task re-attached after a client restart renders its templates again
// without restarting when their content did not change; a later change of
// the variable restarts it (change_mode restart).
func TestRestoredTaskTemplatesDoNotRestartUnlessChanged(t *testing.T) {
	task, alloc, allocDir, taskDir := templateTask(t)
	if err := os.WriteFile(filepath.Join(taskDir, "local/app.conf"), []byte("a=1"), 0o644); err != nil {
		t.Fatal(err)
	}
	be := &varBackend{index: 5, vars: map[string]map[string]string{"nomad/jobs/app": {"a": "1"}}}
	drv := mock.New()
	tc := &drivers.TaskConfig{ID: alloc.ID + "/web", AllocID: alloc.ID, Name: "web", Config: task.Config}
	if _, err := drv.StartTask(tc); err != nil { // the previous client's start
		t.Fatal(err)
	}
	tr := New(Config{Alloc: alloc, Task: task, Driver: drv, StateDB: &memDB{}, AllocDir: allocDir, TaskDir: taskDir, Templates: be})
	tr.Restore(&structs.TaskState{State: structs.TaskStateRunning, StartedAt: time.Now().Add(-time.Minute)},
		&state.LocalTaskState{Handle: &drivers.TaskHandle{Config: tc, State: drivers.TaskStateRunning}})
	go tr.Run()
	t.Cleanup(func() { tr.Kill("test"); <-tr.WaitCh() })

	// A variable write the template does not read wakes the watch; the
	// content stays the same, so nothing happens.
	be.put("nomad/jobs/other", map[string]string{"x": "y"})
	be.put("nomad/jobs/app", map[string]string{"a": "2"})
	testutil.WaitFor(t, 10*time.Second, func() error {
		if !hasEvent(tr, structs.TaskRestartSignaled, "Template with change_mode restart re-rendered") || drv.StartCount("web") != 2 {
			return testutil.Errorf("not restarted: %d starts, %v", drv.StartCount("web"), tr.State().Events)
		}
		return nil
	})
	if b, _ := os.ReadFile(filepath.Join(taskDir, "local/app.conf")); string(b) != "a=2" {
		t.Fatalf("file %q", b)
	}
	// One restart in all: the re-attach and the unrelated write made none.
	n := 0
	for _, e := range tr.State().Events {
		if e.Type == structs.TaskRestartSignaled {
			n++
		}
	}
	if n != 1 || tr.State().Restarts != 1 {
		t.Fatalf("%d restart events, %d restarts; want 1: %v", n, tr.State().Restarts, tr.State().Events)
	}
	// The Restarting event gives the template's reason, not an operator's.
	for _, e := range tr.State().Events {
		if e.Type == structs.TaskRestarting && e.RestartReason != "Template with change_mode restart re-rendered" {
			t.Fatalf("Restarting event's reason %q", e.RestartReason)
		}
	}
}

// wait { min } without max renders at most 4 × min after the first change
// (consul-template's default), so a stream of changes still renders.
func TestTemplateWaitDefaults(t *testing.T) {
	lo, hi := 2*time.Second, 10*time.Second
	for _, c := range []struct {
		w              *structs.Template
		wantLo, wantHi time.Duration
	}{
		{&structs.Template{}, 0, 0},
		{&structs.Template{Wait: &api.WaitConfig{Min: &lo}}, lo, 4 * lo},
		{&structs.Template{Wait: &api.WaitConfig{Min: &lo, Max: &hi}}, lo, hi},
	} {
		if gl, gh := templateWait([]*structs.Template{c.w}); gl != c.wantLo || gh != c.wantHi {
			t.Errorf("wait %+v: got %s/%s, want %s/%s", c.w.Wait, gl, gh, c.wantLo, c.wantHi)
		}
	}
}
