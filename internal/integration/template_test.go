package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// taskEvents returns the events of the job's first allocation's task "t"
// (type: message), and its restart count.
func (a *agent) taskEvents(jobID string) (string, []string, uint64) {
	allocs := a.allocsOf(jobID)
	if len(allocs) == 0 {
		return "", nil, 0
	}
	al, _, err := a.client.Allocations().Info(allocs[0].ID, nil)
	if err != nil {
		a.t.Fatalf("alloc info: %v", err)
	}
	ts := al.TaskStates["t"]
	if ts == nil {
		return al.ID, nil, 0
	}
	var out []string
	for _, e := range ts.Events {
		out = append(out, e.Type+": "+e.DisplayMessage)
	}
	return al.ID, out, ts.Restarts
}

func (a *agent) cat(allocID, path string) string {
	s, _ := a.catAlloc(allocID, path)
	return s
}

// A raw_exec task whose template reads a variable: it does not start while
// the variable is missing (a "Missing: nomad.var.block(...)" event says
// why), starts once the variable is put, with the file rendered and the
// env template in its environment; an update of the variable re-renders the
// file and, with change_mode = "restart", restarts the task, which then
// sees the new value in its file and its environment.
func TestTemplateRendersVariablesAndRestartsOnChange(t *testing.T) {
	a := devAgent(t)
	job := rawExecJob("tmplvar", "service", 1, `cat local/app.conf; echo; echo "env APP_PASS=$APP_PASS"; exec sleep 600`)
	task := job.TaskGroups[0].Tasks[0]
	zero := time.Duration(0)
	task.Templates = []*api.Template{
		{DestPath: ptr("local/app.conf"), EmbeddedTmpl: ptr(`password={{ with nomadVar "nomad/jobs/tmplvar" }}{{ .password }}{{ end }}`), Splay: &zero},
		{DestPath: ptr("secrets/app.env"), EmbeddedTmpl: ptr(`APP_PASS={{ with nomadVar "nomad/jobs/tmplvar" }}{{ .password }}{{ end }}`), Envvars: ptr(true), ChangeMode: ptr("noop")},
	}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register: %v", err)
	}
	// Blocked on the missing variable: pending, with the Missing event.
	const missing = "Template: Missing: nomad.var.block(nomad/jobs/tmplvar@default.global)"
	waitFor(t, 30*time.Second, "the Missing event", func() bool {
		_, evs, _ := a.taskEvents("tmplvar")
		return strings.Contains(strings.Join(evs, "\n"), missing)
	})
	allocID, evs, _ := a.taskEvents("tmplvar")
	if strings.Contains(strings.Join(evs, "\n"), "Started") {
		t.Fatalf("the task started without its variable:\n%s", strings.Join(evs, "\n"))
	}

	v := &api.Variable{Path: "nomad/jobs/tmplvar", Items: api.VariableItems{"password": "one"}}
	if _, _, err := a.client.Variables().Create(v, nil); err != nil {
		t.Fatalf("put variable: %v", err)
	}
	waitFor(t, 30*time.Second, "the task to print the first value", func() bool {
		out := a.cat(allocID, "alloc/logs/t.stdout.0")
		return strings.Contains(out, "password=one\nenv APP_PASS=one\n")
	})
	if got := a.cat(allocID, "t/local/app.conf"); got != "password=one" {
		t.Fatalf("local/app.conf = %q", got)
	}

	v.Items["password"] = "two"
	if _, _, err := a.client.Variables().Update(v, nil); err != nil {
		t.Fatalf("update variable: %v", err)
	}
	waitFor(t, 30*time.Second, "the file re-rendered", func() bool {
		return a.cat(allocID, "t/local/app.conf") == "password=two"
	})
	waitFor(t, 30*time.Second, "the task restarted by the template", func() bool {
		_, evs, restarts := a.taskEvents("tmplvar")
		return restarts >= 1 && strings.Contains(strings.Join(evs, "\n"), "Restart Signaled: Template with change_mode restart re-rendered")
	})
	waitFor(t, 30*time.Second, "the restarted task to print the new value", func() bool {
		out := a.cat(allocID, "alloc/logs/t.stdout.0")
		return strings.Contains(out, "password=two\nenv APP_PASS=two\n")
	})
	// One change, one restart.
	if _, _, restarts := a.taskEvents("tmplvar"); restarts != 1 {
		t.Fatalf("restarts = %d, want 1", restarts)
	}
}
