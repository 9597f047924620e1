package taskrunner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/client/template"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// Task event types of the template hook (Nomad's).
const (
	TaskTemplate        = "Template"
	TaskHookMessage     = "Task hook message"
	TaskHookFailed      = "Task hook failed"
	templateRetryMax    = 30 * time.Second
	templateMissingEach = time.Minute
)

// renderTemplates renders the task's templates before its first start
// (blocking while a variable they read is missing) and starts watching
// them. It returns false when the task must not start: a template failed
// (the task is failed), or the task was killed or detached while waiting.
// A re-attached task renders again without applying change_mode, unless a
// file's content really changed.
func (tr *TaskRunner) renderTemplates(attached bool) bool {
	task := tr.cfg.Task
	if len(task.Templates) == 0 {
		return true
	}
	fail := func(err error) bool {
		ev := tr.newEvent(structs.TaskSetupFailure, "Template failed: "+err.Error())
		ev.SetupError = err.Error()
		ev.FailsTask = true
		if attached {
			// The task runs: it is stopped as a failed task would be.
			tr.appendEvent(ev)
			tr.notify()
			tr.Kill("template failed")
			return true
		}
		tr.setState(structs.TaskStateDead, ev)
		return false
	}
	mgr, err := template.New(tr.templateConfig())
	if err != nil {
		return fail(err)
	}
	backoff := time.Second
	lastMissing, lastMissingAt := "", time.Time{}
	for {
		res, err := mgr.Render()
		if err == nil && len(res.Missing) == 0 {
			if err := tr.setTemplateEnv(res); err != nil {
				return fail(err)
			}
			changed := false
			for _, r := range res.Templates {
				changed = changed || r.Changed
			}
			go tr.watchTemplates(mgr, attached && changed, res)
			return true
		}
		if err != nil && tr.templateFatal(err) && !attached {
			return fail(err)
		}
		if attached {
			// The task already runs: it is not held back; the watch
			// renders once what is missing exists.
			tr.logger.Warn("templates of a restored task not rendered yet", "error", err, "missing", res.Missing)
			go tr.watchTemplates(mgr, false, res)
			return true
		}
		wait := time.Duration(0)
		var m string
		if err != nil {
			tr.logger.Warn("rendering templates failed; retrying", "error", err, "in", backoff)
			m = "Template failed to render, retrying: " + err.Error()
			wait = backoff
			backoff = min(2*backoff, templateRetryMax)
		} else {
			m = "Missing: " + strings.Join(res.Missing, ", ")
		}
		if m != lastMissing || tr.now().Sub(lastMissingAt) >= templateMissingEach {
			tr.EmitEvent(tr.newEvent(TaskTemplate, m))
			lastMissing, lastMissingAt = m, tr.now()
		}
		if !tr.awaitTemplateChange(mgr, wait) {
			if tr.killed() {
				tr.setState(structs.TaskStateDead, tr.newEvent(structs.TaskKilled, "Task successfully killed"))
			}
			return false
		}
	}
}

// templateFatal reports whether a render error is for good: a template
// error, or a refusal of the task's identity. A refusal while the task has
// no identity yet (the servers could not sign it) is retried.
func (tr *TaskRunner) templateFatal(err error) bool {
	if !template.Fatal(err) {
		return false
	}
	tr.mu.Lock()
	tok := tr.defaultIdentity
	tr.mu.Unlock()
	return tok != "" || !template.Denied(err)
}

// awaitTemplateChange waits for something the templates read to change
// (or wait, when > 0); false when the task was killed or detached.
func (tr *TaskRunner) awaitTemplateChange(mgr *template.Manager, wait time.Duration) bool {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var timer <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	} else if mgr.HasDeps() {
		ch := make(chan struct{}, 1)
		mgr.Watch(ctx, ch)
		select {
		case <-ch:
			return true
		case <-tr.killCh:
			return false
		case <-tr.detachCh:
			return false
		case <-tr.waitCh:
			return false
		}
	} else {
		// Nothing to watch and nothing failed: poll now and then.
		t := time.NewTimer(templateRetryMax)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
		return true
	case <-tr.killCh:
		return false
	case <-tr.detachCh:
		return false
	case <-tr.waitCh:
		return false
	}
}

func (tr *TaskRunner) templateConfig() template.Config {
	tr.mu.Lock()
	alloc := tr.alloc
	tr.mu.Unlock()
	in := EnvInput{Alloc: alloc, Task: tr.cfg.Task, Node: tr.cfg.Node, Region: tr.cfg.Region, AllocDir: tr.cfg.AllocDir, TaskDir: tr.cfg.TaskDir}
	env := tr.cfg.BuildEnv(in)
	for k, v := range tr.deviceEnv {
		env[k] = v
	}
	ns := alloc.Namespace
	if ns == "" {
		ns = "default"
	}
	return template.Config{
		Templates: tr.cfg.Task.Templates, TaskDir: tr.cfg.TaskDir, AllocDir: tr.cfg.AllocDir, Env: env,
		Backend: tr.cfg.Templates, Namespace: ns, Region: tr.cfg.Region,
		Token: func() string {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return tr.defaultIdentity
		},
	}
}

// setTemplateEnv parses the rendered templates with env = true into the
// task's environment (used from the next start on).
func (tr *TaskRunner) setTemplateEnv(res template.Result) error {
	env := map[string]string{}
	found := false
	for _, r := range res.Templates {
		if r.Spec.Envvars == nil || !*r.Spec.Envvars {
			continue
		}
		found = true
		kv, err := template.ParseEnv(r.Content)
		if err != nil {
			return fmt.Errorf("template %q with env = true: %w", ptrStr(r.Spec.DestPath), err)
		}
		for k, v := range kv {
			env[k] = v
		}
	}
	if !found {
		return nil
	}
	tr.mu.Lock()
	if tr.templateEnv == nil {
		tr.templateEnv = map[string]string{}
	}
	for k, v := range env {
		tr.templateEnv[k] = v
	}
	tr.mu.Unlock()
	return nil
}

func ptrStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// watchTemplates renders the templates again whenever what they read
// changes, and applies the change_mode of those whose file changed, until
// the task is done. applyFirst: the first render (of a re-attached task)
// changed files, so their change_mode is applied at once.
func (tr *TaskRunner) watchTemplates(mgr *template.Manager, applyFirst bool, first template.Result) {
	if applyFirst {
		tr.applyTemplateChanges(first)
	}
	minWait, maxWait := templateWait(tr.cfg.Task.Templates)
	backoff := time.Second
	for {
		if mgr.Static() {
			return // nothing to watch
		}
		if !tr.awaitTemplateChange(mgr, 0) {
			return
		}
		// wait { min max }: render once things settle for min, at most
		// max after the first change.
		if minWait > 0 {
			deadline := time.Now().Add(maxWait)
			for {
				d := minWait
				if maxWait > 0 {
					d = min(d, time.Until(deadline))
				}
				if d <= 0 {
					break
				}
				ctx, cancel := context.WithCancel(context.Background())
				ch := make(chan struct{}, 1)
				mgr.Watch(ctx, ch)
				t := time.NewTimer(d)
				settled := false
				select {
				case <-t.C:
					settled = true
				case <-ch:
				case <-tr.killCh:
				case <-tr.detachCh:
				case <-tr.waitCh:
				}
				t.Stop()
				cancel()
				if tr.killed() || isDone(tr.detachCh) || isDone(tr.waitCh) {
					return
				}
				if settled {
					break
				}
			}
		}
		for {
			res, err := mgr.Render()
			if err == nil {
				backoff = time.Second
				if len(res.Missing) > 0 {
					tr.EmitEvent(tr.newEvent(TaskTemplate, "Missing: "+strings.Join(res.Missing, ", ")))
				}
				tr.applyTemplateChanges(res)
				break
			}
			if tr.templateFatal(err) {
				ev := tr.newEvent(TaskTemplate, "Template failed: "+err.Error())
				ev.FailsTask = true
				tr.EmitEvent(ev)
				tr.Kill("template failed: " + err.Error())
				return
			}
			tr.logger.Warn("rendering templates failed; retrying", "error", err, "in", backoff)
			select {
			case <-time.After(backoff):
			case <-tr.killCh:
				return
			case <-tr.detachCh:
				return
			case <-tr.waitCh:
				return
			}
			backoff = min(2*backoff, templateRetryMax)
		}
	}
}

// templateWait is the wait block that applies: the largest min and max
// of the templates'.
func templateWait(ts []*structs.Template) (time.Duration, time.Duration) {
	var lo, hi time.Duration
	for _, t := range ts {
		if t == nil || t.Wait == nil {
			continue
		}
		if t.Wait.Min != nil {
			lo = max(lo, *t.Wait.Min)
		}
		if t.Wait.Max != nil {
			hi = max(hi, *t.Wait.Max)
		}
	}
	if hi == 0 {
		hi = 4 * lo // consul-template's default: a stream of changes still renders
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// applyTemplateChanges applies the change_mode of the templates whose
// file changed: a restart (one, whatever the number of templates asking
// for it) wins over signals and scripts; otherwise each distinct signal is
// sent once and each script run. Restarts and signals wait a random splay
// first.
func (tr *TaskRunner) applyTemplateChanges(res template.Result) {
	var restart bool
	signals := map[string]bool{}
	var scripts []*structs.Template
	var splay time.Duration
	changedEnv := false
	for _, r := range res.Templates {
		if !r.Changed {
			continue
		}
		if r.Spec.Envvars != nil && *r.Spec.Envvars {
			changedEnv = true
		}
		mode := ptrStr(r.Spec.ChangeMode)
		switch mode {
		case "", "restart":
			restart = true
		case "signal":
			if sig := ptrStr(r.Spec.ChangeSignal); sig != "" {
				signals[sig] = true
			}
		case "script":
			scripts = append(scripts, r.Spec)
		default: // noop
			continue
		}
		if r.Spec.Splay != nil {
			splay = max(splay, *r.Spec.Splay)
		}
	}
	if changedEnv {
		if err := tr.setTemplateEnv(res); err != nil {
			ev := tr.newEvent(TaskTemplate, "Template failed: "+err.Error())
			tr.EmitEvent(ev)
		}
	}
	if !restart && len(signals) == 0 && len(scripts) == 0 {
		return
	}
	if splay > 0 {
		select {
		case <-time.After(rand.N(splay)):
		case <-tr.killCh:
			return
		case <-tr.detachCh:
			return
		}
	}
	if restart {
		if err := tr.Restart("Template with change_mode restart re-rendered", 0); err != nil {
			tr.logger.Debug("template restart skipped", "error", err)
		}
		return
	}
	sigs := make([]string, 0, len(signals))
	for s := range signals {
		sigs = append(sigs, s)
	}
	sort.Strings(sigs)
	for _, s := range sigs {
		if err := tr.Signal(s, "Template re-rendered"); err != nil {
			ev := tr.newEvent(TaskHookFailed, fmt.Sprintf("Template failed to send signal %s: %v", s, err))
			tr.EmitEvent(ev)
		}
	}
	for _, t := range scripts {
		tr.runChangeScript(t)
	}
}

// runChangeScript runs a template's change_script in the task (the
// driver's exec). A failure with fail_on_error kills the task.
func (tr *TaskRunner) runChangeScript(t *structs.Template) {
	cs := t.ChangeScript
	if cs == nil || ptrStr(cs.Command) == "" {
		return
	}
	cmd := append([]string{ptrStr(cs.Command)}, cs.Args...)
	timeout := 5 * time.Second
	if cs.Timeout != nil && *cs.Timeout > 0 {
		timeout = *cs.Timeout
	}
	failOnError := cs.FailOnError != nil && *cs.FailOnError
	var err error
	code := 0
	ex, ok := tr.cfg.Driver.(drivers.ExecDriver)
	if !ok {
		err = fmt.Errorf("driver %q cannot run commands in a task", tr.cfg.Task.Driver)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		var out strings.Builder
		code, err = ex.ExecTask(ctx, tr.taskID, drivers.ExecOptions{Command: cmd, Stdout: &out, Stderr: &out})
		if err == nil && ctx.Err() != nil {
			err = fmt.Errorf("timed out after %s", timeout)
		}
		cancel()
		if err == nil && code != 0 {
			err = fmt.Errorf("exit code %d", code)
		}
	}
	if err == nil {
		tr.EmitEvent(tr.newEvent(TaskHookMessage, fmt.Sprintf("Template successfully ran script %s with arguments: %v. Exit code: %d", cmd[0], cmd[1:], code)))
		return
	}
	msg := fmt.Sprintf("Template failed to run script %s with arguments %v on change: %v", cmd[0], cmd[1:], err)
	if failOnError {
		ev := tr.newEvent(structs.TaskKilling, msg)
		ev.FailsTask = true
		tr.EmitEvent(ev)
		tr.Kill(msg)
		return
	}
	tr.EmitEvent(tr.newEvent(TaskHookFailed, msg))
}
