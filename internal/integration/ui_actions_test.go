package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/nomad/api"
)

// The job and client actions an operator takes from the UI, each driven
// by clicks in a real browser and checked in the API: dispatch of a
// parameterized job (payload with non-Latin-1 text, required and optional
// meta) and its child listed on the parent, a periodic force launch
// showing the launched child, a deployment failed with its Fail button, a
// revert to an older version, stop → start → purge, a log switched from
// stdout to stderr, a client drained and undrained, and the not-found
// pages of a job, an allocation and an unknown URL.
func TestUIJobActions(t *testing.T) {
	b := newBrowser(t, 1280, 800)
	a := devAgent(t)
	const wait = 60 * time.Second
	open := func(path string) {
		t.Helper()
		b.run("open "+path, wait, chromedp.Navigate(a.url(path)))
	}
	click := func(sel string) {
		t.Helper()
		b.waitJS(sel, wait, `document.querySelector(`+jsString(sel)+`) && !document.querySelector(`+jsString(sel)+`).disabled`)
		evalJS[bool](b, `window.confirm = () => true, document.querySelector(`+jsString(sel)+`).click(), true`)
	}

	param := rawExecJob("param", "batch", 1, `echo who=$NOMAD_META_who extra=$NOMAD_META_extra; cat $NOMAD_TASK_DIR/in.txt`)
	param.ParameterizedJob = &api.ParameterizedJobConfig{Payload: "optional", MetaRequired: []string{"who"}, MetaOptional: []string{"extra"}}
	param.TaskGroups[0].Tasks[0].DispatchPayload = &api.DispatchPayloadConfig{File: "in.txt"}
	cron := rawExecJob("cron", "batch", 1, "echo cron")
	cron.Periodic = &api.PeriodicConfig{Spec: ptr("0 0 1 1 *"), SpecType: ptr("cron")}
	// svc's deployments stay running (a 5 minute min_healthy_time) until
	// failed from the UI.
	svc := rawExecJob("svc", "service", 1, "echo svc-out; echo svc-err >&2; sleep 300")
	svc.Update = &api.UpdateStrategy{MinHealthyTime: ptr(5 * time.Minute), HealthyDeadline: ptr(10 * time.Minute),
		ProgressDeadline: ptr(15 * time.Minute), AutoRevert: ptr(false)}
	for _, j := range []*api.Job{param, cron, svc} {
		if _, _, err := a.client.Jobs().Register(j, nil); err != nil {
			t.Fatal(err)
		}
	}

	// Dispatch from the parameterized job's page: the form asks for the
	// payload and each meta key; the child opens, has no Dispatch button of
	// its own, and got the payload and meta as typed.
	open("/ui/jobs/param")
	click(`button[data-act="dispatch"]`)
	b.waitJS("the dispatch form", wait, `document.querySelector("#dispatch-payload") && document.querySelector('input[data-meta="who"]') && document.querySelector('input[data-meta="extra"]')`)
	b.shot("dispatch-form")
	evalJS[bool](b, `document.querySelector("#dispatch-payload").value = "héllo ✓ payload", document.querySelector('input[data-meta="who"]').value = "ops", document.querySelector('input[data-meta="extra"]').value = "x1", true`)
	click("#dispatchbtn")
	b.waitJS("the dispatched child's page", wait, `location.pathname.startsWith("/ui/jobs/param%2Fdispatch-") && document.querySelector("#jobhead") && document.querySelector("#jobhead").innerText.includes("param/dispatch-")`)
	if evalJS[bool](b, `!!document.querySelector('button[data-act="dispatch"]')`) {
		t.Error("a dispatched child offers Dispatch (the server refuses dispatching a dispatched job)")
	}
	children, _, err := a.client.Jobs().PrefixList("param/dispatch-")
	if err != nil || len(children) != 1 {
		t.Fatalf("dispatched children: %v %v", children, err)
	}
	child, _, err := a.client.Jobs().Info(children[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(child.Payload) != "héllo ✓ payload" || child.Meta["who"] != "ops" || child.Meta["extra"] != "x1" {
		t.Errorf("dispatched child: payload %q meta %v", child.Payload, child.Meta)
	}
	open("/ui/jobs/param")
	b.waitJS("the child on the parent's page", wait, `document.querySelector('#children tr[data-job="`+children[0].ID+`"]')`)

	// Force launch of the periodic job: its child appears on its page.
	open("/ui/jobs/cron")
	click(`button[data-act="force"]`)
	b.waitJS("the launched child", wait, `[...document.querySelectorAll("#children tr[data-job]")].some(r => r.dataset.job.startsWith("cron/periodic-"))`)
	b.shot("periodic-children")

	// Fail svc's running deployment from its Fail button.
	open("/ui/jobs/svc/deployments")
	click(`button[data-act="faildep"]`)
	b.waitJS("the deployment failed", wait, `document.querySelector(".deployment") && document.querySelector(".deployment").innerText.includes("failed") && !document.querySelector('button[data-act="faildep"]')`)
	if d, _, err := a.client.Jobs().LatestDeployment("svc", nil); err != nil || d == nil || d.Status != "failed" {
		t.Fatalf("svc's deployment after Fail: %+v %v", d, err)
	}

	// A task's log, switched from stdout to stderr: the stderr line shows,
	// the stream follows, and no error is left on the page.
	allocs := a.allocsOf("svc")
	if len(allocs) != 1 {
		t.Fatalf("svc allocations: %d", len(allocs))
	}
	open("/ui/allocations/" + allocs[0].ID + "/t/logs")
	b.waitJS("stdout", wait, `document.querySelector("#logs").innerText.includes("svc-out")`)
	evalJS[bool](b, `document.querySelector("#logtype").value = "stderr", document.querySelector("#logtype").dispatchEvent(new Event("change")), true`)
	b.waitJS("stderr", wait, `document.querySelector("#logs").innerText.includes("svc-err")`)
	if s := evalJS[string](b, `document.querySelector("#err").innerText + "|" + document.querySelector("#logstate").innerText`); s != "|streaming…" {
		t.Errorf("after switching to stderr: error and state %q, want no error and streaming", s)
	}

	// Revert: a second version, then back to version 0 from the versions
	// tab; version 2 is version 0's definition.
	svc.TaskGroups[0].Tasks[0].Config["args"] = []string{"-c", "echo v1; sleep 300"}
	if _, _, err := a.client.Jobs().Register(svc, nil); err != nil {
		t.Fatal(err)
	}
	open("/ui/jobs/svc/versions")
	click(`.version[data-version="0"] button[data-act="revert"]`)
	b.waitJS("version 2, reverted", wait, `document.querySelector('.version[data-version="2"]') && document.querySelector('.version[data-version="2"] .diff')`)
	if j, _, err := a.client.Jobs().Info("svc", nil); err != nil || *j.Version != 2 || !strings.Contains(strings.Join(anyStrings(j.TaskGroups[0].Tasks[0].Config["args"]), " "), "svc-out") {
		t.Fatalf("svc after revert: %v %v", j, err)
	}

	// Stop, start, then stop and purge from the job's header.
	open("/ui/jobs/svc")
	click("#stopbtn")
	b.waitJS("the Start button", wait, `document.querySelector('button[data-act="start"]')`)
	click(`button[data-act="start"]`)
	b.waitJS("svc running again", wait, `document.querySelector("#stopbtn") && document.querySelector("#jobhead").innerText.includes("running")`)
	if j, _, err := a.client.Jobs().Info("svc", nil); err != nil || *j.Stop {
		t.Fatalf("svc after Start: %v %v", j, err)
	}
	click("#stopbtn")
	click(`button[data-act="purge"]`)
	b.waitJS("the jobs list after the purge", wait, `location.pathname === "/ui/jobs" && document.querySelector('#jobrows tr[data-job="cron"]') && !document.querySelector('#jobrows tr[data-job="svc"]')`)
	if _, _, err := a.client.Jobs().Info("svc", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("svc after Purge: %v", err)
	}

	// The jobs list leaves children to their parents' pages unless asked.
	if evalJS[bool](b, `[...document.querySelectorAll("#jobrows tr[data-job]")].some(r => r.dataset.job.includes("/"))`) {
		t.Errorf("the jobs list shows child jobs: %s", evalJS[string](b, `document.querySelector("#jobrows").innerText`))
	}
	click("#showchildren")
	b.waitJS("the children listed", wait, `location.search.includes("children=1") && document.querySelector('#jobrows tr[data-job="`+children[0].ID+`"]')`)

	// A job in another namespace whose source names none (as `nomad job
	// run -namespace prod` submits it): an edit of its definition plans
	// and runs that job, not a new one in "default".
	if _, err := a.client.Namespaces().Register(&api.Namespace{Name: "prod"}, nil); err != nil {
		t.Fatal(err)
	}
	nsSrc := "job \"nsjob\" {\n  datacenters = [\"*\"]\n  group \"g\" {\n    count = 1\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/sh\"\n        args    = [\"-c\", \"sleep 300\"]\n      }\n      resources {\n        cpu    = 20\n        memory = 32\n      }\n    }\n  }\n}\n"
	nsJob, err := a.client.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: nsSrc, Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	nsJob.Namespace = ptr("prod")
	if _, _, err := a.client.Jobs().RegisterOpts(nsJob, &api.RegisterOptions{Submission: &api.JobSubmission{Source: nsSrc, Format: "hcl2"}}, &api.WriteOptions{Namespace: "prod"}); err != nil {
		t.Fatal(err)
	}
	open("/ui/jobs/nsjob@prod/definition")
	b.waitJS("the submitted HCL", wait, `document.querySelector("#jobsrc") && document.querySelector("#jobsrc").value.includes("nsjob")`)
	evalJS[bool](b, `(() => { const t = document.querySelector("#jobsrc"); t.value = t.value.replace("count = 1", "count = 2"); document.querySelector("#planbtn").click(); return true })()`)
	b.waitJS("the edit's plan", wait, `document.querySelector("#runbtn") || document.querySelector("#plan-err").innerText`)
	if plan := evalJS[string](b, `document.querySelector("#planout").innerText`); !strings.Contains(plan, `Count: "1" => "2"`) || strings.Contains(plan, `Namespace: "default"`) {
		t.Fatalf("the plan of an edit of prod's nsjob is not an edit of it:\n%s", plan)
	}
	click("#runbtn")
	b.waitJS("nsjob's page", wait, `location.pathname === "/ui/jobs/nsjob@prod"`)
	if j, _, err := a.client.Jobs().Info("nsjob", &api.QueryOptions{Namespace: "prod"}); err != nil || *j.TaskGroups[0].Count != 2 {
		t.Fatalf("prod's nsjob after the edit: %v %v", j, err)
	}
	if _, _, err := a.client.Jobs().Info("nsjob", nil); err == nil {
		t.Fatal("the edit of prod's nsjob registered a job nsjob in the default namespace")
	}

	// Drain the client from its page, then stop the drain.
	nodes, _, err := a.client.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	open("/ui/clients/" + nodes[0].ID)
	click(`button[data-act="drain"]`)
	b.waitJS("the client draining", wait, `document.querySelector("#nodehead").innerText.includes("draining") && document.querySelector('button[data-act="drain"]').innerText === "Stop drain"`)
	if n, _, err := a.client.Nodes().Info(nodes[0].ID, nil); err != nil || n.DrainStrategy == nil && (n.LastDrain == nil || n.LastDrain.Status != api.DrainStatusComplete) {
		t.Fatalf("the node after Drain: %+v %v", n, err)
	}
	click(`button[data-act="drain"]`)
	b.waitJS("the drain stopped", wait, `!document.querySelector("#nodehead").innerText.includes("draining") && document.querySelector('button[data-act="drain"]').innerText === "Drain" && document.querySelector("#nodehead").innerText.includes("eligible")`)

	// A job whose ID has an "@" opens from the jobs list (its URL keeps
	// the namespace: the page splits <id>@<namespace> at the last "@").
	at := rawExecJob("team@x", "batch", 1, "true")
	at.Datacenters = []string{"nowhere"}
	if _, _, err := a.client.Jobs().Register(at, nil); err != nil {
		t.Fatal(err)
	}
	open("/ui/jobs")
	click(`#jobrows tr[data-job="team@x"] a`)
	b.waitJS("team@x's page", wait, `document.querySelector("#jobhead") && document.querySelector("#jobhead").innerText.startsWith("team@x")`)

	// Pages of things that do not exist say so and stop asking.
	for _, c := range []struct{ path, heading string }{
		{"/ui/jobs/nosuch", "Job not found"},
		{"/ui/jobs/nosuch@prod/versions", "Job not found"},
		{"/ui/allocations/00000000-0000-0000-0000-000000000000", "Allocation not found"},
		{"/ui/clients/00000000-0000-0000-0000-000000000000", "Client not found"},
		{"/ui/no/such/page", "Not found"},
	} {
		open(c.path)
		b.waitJS(c.heading, wait, `document.querySelector("main h1") && document.querySelector("main h1").innerText === `+jsString(c.heading))
		if c.path == "/ui/jobs/nosuch" {
			b.shot("job-not-found")
			if evalJS[bool](b, `!!document.querySelector("nav.tabs, #summary")`) {
				t.Errorf("%s: the not-found page still shows the job's tabs", c.path)
			}
		}
	}
}

func anyStrings(v any) []string {
	var out []string
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		for _, s := range x {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
