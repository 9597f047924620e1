package mock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/drivers"
)

// Name is the driver name jobspecs use.
const Name = "mock_driver"

// Driver is the in-process mock driver. The zero value is not usable; use New.
type Driver struct {
	name string

	mu      sync.Mutex
	tasks   map[string]*task
	starts  map[string]int // task name -> StartTask calls
	health  string
	healthD string
}

type task struct {
	cfg       *drivers.TaskConfig
	started   time.Time
	completed time.Time
	done      chan struct{}
	stopCh    chan string // signal name
	stopOnce  sync.Once
	result    *drivers.ExitResult
}

// New returns a healthy mock driver named "mock_driver".
func New() *Driver { return NewNamed(Name) }

// NewNamed returns a mock driver answering to another name.
func NewNamed(name string) *Driver {
	return &Driver{
		name:   name,
		tasks:  map[string]*task{},
		starts: map[string]int{},
		health: drivers.HealthHealthy, healthD: "Healthy",
	}
}

// SetHealth changes what Fingerprint reports.
func (d *Driver) SetHealth(health, desc string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.health, d.healthD = health, desc
}

// StartCount reports how many times a task of that name was started.
func (d *Driver) StartCount(taskName string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.starts[taskName]
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return d.name }

// Fingerprint implements drivers.Driver.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	d.mu.Lock()
	defer d.mu.Unlock()
	attrs := map[string]string{}
	if d.health != drivers.HealthUndetected {
		attrs["driver."+d.name] = "1"
	}
	return &drivers.Fingerprint{Attributes: attrs, Health: d.health, HealthDescription: d.healthD}
}

// StartTask implements drivers.Driver.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	d.mu.Lock()
	d.starts[cfg.Name]++
	if _, ok := d.tasks[cfg.ID]; ok {
		d.mu.Unlock()
		return nil, fmt.Errorf("task %q already started", cfg.ID)
	}
	d.mu.Unlock()

	if msg, _ := cfg.Config["start_error"].(string); msg != "" {
		return nil, errors.New(msg)
	}
	runFor, err := duration(cfg.Config["run_for"])
	if err != nil {
		return nil, fmt.Errorf("run_for: %w", err)
	}
	exitCode, err := integer(cfg.Config["exit_code"])
	if err != nil {
		return nil, fmt.Errorf("exit_code: %w", err)
	}
	exitSignal, err := integer(cfg.Config["exit_signal"])
	if err != nil {
		return nil, fmt.Errorf("exit_signal: %w", err)
	}
	if err := appendTo(cfg.StdoutPath, cfg.Config["stdout_string"]); err != nil {
		return nil, err
	}
	if err := appendTo(cfg.StderrPath, cfg.Config["stderr_string"]); err != nil {
		return nil, err
	}

	t := &task{cfg: cfg, started: time.Now(), done: make(chan struct{}), stopCh: make(chan string, 1)}
	d.mu.Lock()
	d.tasks[cfg.ID] = t
	d.mu.Unlock()

	go func() {
		var timer <-chan time.Time
		if runFor >= 0 {
			tm := time.NewTimer(runFor)
			defer tm.Stop()
			timer = tm.C
		}
		var res *drivers.ExitResult
		select {
		case <-timer:
			res = &drivers.ExitResult{ExitCode: exitCode, Signal: exitSignal}
		case sig := <-t.stopCh:
			res = &drivers.ExitResult{Signal: 15}
			if sig == "SIGKILL" {
				res.Signal = 9
			}
		}
		d.mu.Lock()
		t.result = res
		t.completed = time.Now()
		d.mu.Unlock()
		close(t.done)
	}()
	return &drivers.TaskHandle{Version: 1, Config: cfg, State: drivers.TaskStateRunning}, nil
}

func appendTo(path string, v any) error {
	s, _ := v.(string)
	if path == "" || s == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d *Driver) get(id string) (*task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.tasks[id]
	if !ok {
		return nil, drivers.ErrTaskNotFound
	}
	return t, nil
}

// RecoverTask implements drivers.Driver: only tasks still in memory recover.
func (d *Driver) RecoverTask(h *drivers.TaskHandle) error {
	if h == nil || h.Config == nil {
		return errors.New("nil handle")
	}
	_, err := d.get(h.Config.ID)
	return err
}

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, id string) (<-chan *drivers.ExitResult, error) {
	t, err := d.get(id)
	if err != nil {
		return nil, err
	}
	ch := make(chan *drivers.ExitResult, 1)
	go func() {
		select {
		case <-t.done:
			d.mu.Lock()
			r := *t.result
			d.mu.Unlock()
			ch <- &r
		case <-ctx.Done():
		}
		close(ch)
	}()
	return ch, nil
}

// StopTask implements drivers.Driver.
func (d *Driver) StopTask(id string, timeout time.Duration, signal string) error {
	t, err := d.get(id)
	if err != nil {
		return err
	}
	t.stopOnce.Do(func() { t.stopCh <- signal })
	select {
	case <-t.done:
		return nil
	case <-time.After(timeout + 5*time.Second):
		return errors.New("mock task did not stop")
	}
}

// DestroyTask implements drivers.Driver.
func (d *Driver) DestroyTask(id string, force bool) error {
	t, err := d.get(id)
	if err != nil {
		return err
	}
	select {
	case <-t.done:
	default:
		if !force {
			return errors.New("task is still running")
		}
		t.stopOnce.Do(func() { t.stopCh <- "SIGKILL" })
		<-t.done
	}
	d.mu.Lock()
	delete(d.tasks, id)
	d.mu.Unlock()
	return nil
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(id string) (*drivers.TaskStatus, error) {
	t, err := d.get(id)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st := &drivers.TaskStatus{ID: id, Name: t.cfg.Name, State: drivers.TaskStateRunning, StartedAt: t.started}
	if t.result != nil {
		st.State = drivers.TaskStateExited
		st.CompletedAt = t.completed
		r := *t.result
		st.ExitResult = &r
	}
	return st, nil
}

// SignalTask implements drivers.Driver; the mock ignores signals other than
// those that stop it (SIGTERM, SIGKILL, SIGINT).
func (d *Driver) SignalTask(id string, signal string) error {
	t, err := d.get(id)
	if err != nil {
		return err
	}
	switch signal {
	case "SIGTERM", "SIGKILL", "SIGINT":
		t.stopOnce.Do(func() { t.stopCh <- signal })
	}
	return nil
}

func duration(v any) (time.Duration, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case string:
		return time.ParseDuration(x)
	case time.Duration:
		return x, nil
	}
	n, err := integer(v)
	return time.Duration(n), err
}

func integer(v any) (int, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case uint64:
		return int(x), nil
	case float64:
		return int(x), nil
	case string:
		return strconv.Atoi(x)
	}
	return 0, fmt.Errorf("unsupported type %T", v)
}

var _ drivers.Driver = (*Driver)(nil)

// configKeys are the `config {}` keys StartTask reads (see the package doc).
var configKeys = []string{"run_for", "exit_code", "exit_signal", "start_error", "stdout_string", "stderr_string"}

// ValidateTaskConfig checks a task's `config {}` block as StartTask would
// read it; the servers call it at registration.
func ValidateTaskConfig(m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		var err error
		switch k {
		case "run_for":
			_, err = duration(v)
		case "exit_code", "exit_signal":
			_, err = integer(v)
		case "start_error", "stdout_string", "stderr_string":
			if _, ok := v.(string); !ok && v != nil {
				err = fmt.Errorf("must be a string, got %T", v)
			}
		default:
			return fmt.Errorf("config: unknown key %q (%s takes %s)", k, Name, strings.Join(configKeys, ", "))
		}
		if err != nil {
			return fmt.Errorf("config: %s: %w", k, err)
		}
	}
	return nil
}
