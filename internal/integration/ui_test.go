package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/nomad/api"
)

const uiJobHCL = `job "uiweb" {
  datacenters = ["*"]
  group "web" {
    count = 2
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello-from-ui $NOMAD_ALLOC_INDEX; while true; do sleep 1; done"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

// The web UI in a real browser against a dev agent: the jobs page, a job
// run by pasting HCL and planning first, its allocations turning running
// without a reload, a task's log line, a command in the exec terminal, the
// alloc dir, the client's
// allocations, a placement failure's reason, search and keyboard, a stop
// that shows the job dead, and the phone-width layout. Screenshots of
// each page go to $DROVER_UI_SHOTS (default a temp dir, logged).
func TestUIBrowser(t *testing.T) {
	b := newBrowser(t, 1280, 800)
	a := devAgent(t)
	const wait = 60 * time.Second // a headless Chromium and an agent share 2 loaded cores
	open := func(path string) {
		t.Helper()
		b.run("open "+path, wait, chromedp.Navigate(a.url(path)))
	}

	// "/" redirects to the UI; the jobs page says there are none yet.
	open("/")
	b.waitJS("the empty jobs page", wait, `location.pathname === "/ui/jobs" && document.querySelector("#jobrows").innerText.includes("No jobs yet")`)
	if nav := evalJS[string](b, `(document.querySelector("#nav a.active") || {dataset: {}}).dataset.nav || ""`); nav != "jobs" {
		t.Errorf("after / redirected to the jobs page, the navigation highlights %q, want jobs", nav)
	}
	b.shot("jobs-empty")
	evalJS[bool](b, `window.__noReload = true`)

	// Run a job: paste its HCL, plan (the diff shows the new job and its
	// placements), then run.
	evalJS[bool](b, `document.querySelector('nav.side a[href="/ui/jobs/run"]').click(), true`)
	b.waitJS("the run page", wait, `document.querySelector("#jobsrc")`)
	evalJS[bool](b, `document.querySelector("#jobsrc").value = `+jsString(uiJobHCL)+`, true`)
	evalJS[bool](b, `document.querySelector("#planbtn").click(), true`)
	b.waitJS("the plan", wait, `document.querySelector("#planout") && document.querySelector("#planout").innerText.includes('Job: "uiweb"') && document.querySelector("#runbtn")`)
	planText := evalJS[string](b, `document.querySelector("#planout").innerText`)
	if !strings.Contains(planText, "Task Group: \"web\"") || !strings.Contains(planText, "Place") {
		t.Errorf("plan does not show the group and its placements:\n%s", planText)
	}
	b.shot("run-plan")
	if jobs, _, _ := a.client.Jobs().List(nil); len(jobs) != 0 {
		t.Fatalf("planning registered the job: %d jobs", len(jobs))
	}
	evalJS[bool](b, `document.querySelector("#runbtn").click(), true`)

	// The job page opens and its allocations turn running with no reload.
	b.waitJS("the job page", wait, `location.pathname === "/ui/jobs/uiweb" && document.querySelector("#allocs")`)
	b.waitJS("two running allocations", wait, `document.querySelectorAll('#allocs tr[data-status="running"]').length === 2`)
	b.waitJS("the summary counting 2 running", wait, `document.querySelector('#summary tr[data-group="web"] .c-running') && document.querySelector('#summary tr[data-group="web"] .c-running').innerText === "2"`)
	if !evalJS[bool](b, `window.__noReload === true`) {
		t.Fatal("the page reloaded between running the job and its allocations running")
	}
	b.shot("job")

	allocs := a.allocsOf("uiweb")
	if len(allocs) != 2 {
		t.Fatalf("%d allocations, want 2", len(allocs))
	}
	alloc := allocs[0]

	// The allocation page shows its task running.
	open("/ui/allocations/" + alloc.ID)
	b.waitJS("the allocation page", wait, `document.querySelector('.task[data-task="server"]') && document.querySelector('.task[data-task="server"]').innerText.includes("running")`)
	b.shot("allocation")

	// A task's log line, streamed.
	open("/ui/allocations/" + alloc.ID + "/server/logs")
	b.waitJS("the log line", wait, `document.querySelector("#logs").innerText.includes("hello-from-ui")`)
	b.shot("logs")

	// The exec terminal: a shell in the task on a TTY. A command typed in
	// (with a typo erased by Backspace, which the TTY echoes as "\b \b")
	// shows as typed, followed by its output on the next line: the
	// terminal applies the shell's CR/LF and backspaces.
	open("/ui/allocations/" + alloc.ID + "/server/exec")
	b.waitJS("the exec session", wait, `/connected|closed/.test(document.querySelector("#termstate").innerText)`)
	if state := evalJS[string](b, `document.querySelector("#termstate").innerText`); state != "connected" {
		t.Fatalf("the exec terminal did not connect: %q", state)
	}
	b.waitJS("the shell's prompt", wait, `/[$#] █$/.test(document.querySelector("#term").innerText)`)
	evalJS[bool](b, `(() => { const t = document.querySelector("#term"); for (const k of [..."echo exec-$((6*8", "Backspace", ..."7))", "Enter"]) t.dispatchEvent(new KeyboardEvent("keydown", {key: k, bubbles: true})); return true })()`)
	b.waitJS("the command's output", wait, `document.querySelector("#term").innerText.includes("exec-42")`)
	b.waitJS("the command line as typed, then its output", wait, `/[$#] echo exec-\$\(\(6\*7\)\)\nexec-42\n[$#] █$/.test(document.querySelector("#term").innerText)`)
	b.shot("exec")

	// The alloc dir: the task's directory and the shared alloc/logs.
	open("/ui/allocations/" + alloc.ID + "/fs")
	b.waitJS("the alloc dir", wait, `[...document.querySelectorAll("table.files a")].map(a => a.innerText.trim()).includes("📁 server")`)
	evalJS[bool](b, `[...document.querySelectorAll("table.files a")].find(a => a.innerText.includes("alloc")).click(), true`)
	b.waitJS("alloc/", wait, `location.pathname.endsWith("/fs/alloc") && document.querySelector("table.files") && document.querySelector("table.files").innerText.includes("logs")`)
	evalJS[bool](b, `[...document.querySelectorAll("table.files a")].find(a => a.innerText.includes("logs")).click(), true`)
	b.waitJS("alloc/logs/", wait, `document.querySelector("table.files") && document.querySelector("table.files").innerText.includes("server.stdout.0")`)
	b.shot("files")
	evalJS[bool](b, `[...document.querySelectorAll("table.files a")].find(a => a.innerText.includes("server.stdout.0")).click(), true`)
	b.waitJS("the file's content", wait, `document.querySelector("#filebody") && document.querySelector("#filebody").innerText.includes("hello-from-ui")`)

	// The client shows the allocation.
	nodes, _, err := a.client.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	open("/ui/clients/" + nodes[0].ID)
	b.waitJS("the client's allocations", wait, `document.querySelector('#nodeallocs tr[data-alloc="`+alloc.ID+`"]')`)
	b.waitJS("the client's host figures", wait, `document.querySelector("#hoststats").innerText.includes("Memory used")`)
	b.shot("client")

	// The definition tab shows the submitted HCL; an edit is planned (the
	// diff shows the count change) and run; the versions tab then lists
	// both versions with the diff and a revert.
	open("/ui/jobs/uiweb/definition")
	b.waitJS("the submitted HCL", wait, `document.querySelector("#jobsrc") && document.querySelector("#jobsrc").value.includes("hello-from-ui")`)
	evalJS[bool](b, `(() => { const t = document.querySelector("#jobsrc"); t.value = t.value.replace("count = 2", "count = 3"); document.querySelector("#planbtn").click(); return true })()`)
	b.waitJS("the edit's plan", wait, `document.querySelector("#planout") && document.querySelector("#planout").innerText.includes('Count: "2" => "3"') && document.querySelector("#runbtn")`)
	b.shot("definition-plan")
	evalJS[bool](b, `document.querySelector("#runbtn").click(), true`)
	b.waitJS("three running allocations", wait, `location.pathname === "/ui/jobs/uiweb" && document.querySelectorAll('#allocs tr[data-status="running"]').length === 3`)
	open("/ui/jobs/uiweb/versions")
	b.waitJS("two versions with a revert", wait, `document.querySelectorAll(".version").length === 2 && document.querySelector('.version[data-version="0"] button[data-act="revert"]') && document.querySelector('.version[data-version="1"]').innerText.includes('Count: "2" => "3"')`)
	b.shot("versions")

	// A job that cannot be placed shows why.
	never := rawExecJob("never", "service", 1, "sleep 100")
	never.Constraints = []*api.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "plan9", Operand: "="}}
	if _, _, err := a.client.Jobs().Register(never, nil); err != nil {
		t.Fatal(err)
	}
	open("/ui/jobs/never")
	b.waitJS("the placement failure", wait, `document.querySelector(".placement-failure") && document.querySelector(".placement-failure").innerText.includes("plan9")`)
	b.shot("placement-failure")

	// Search finds the job; keyboard: "/" focuses it, "g c" opens clients.
	open("/ui/jobs")
	b.waitJS("the jobs list", wait, `document.querySelectorAll("#jobrows tr[data-job]").length === 2`)
	evalJS[bool](b, `document.dispatchEvent(new KeyboardEvent("keydown", {key: "/"})), true`)
	if !evalJS[bool](b, `document.activeElement === document.querySelector("main [data-search]")`) {
		t.Error(`"/" did not focus the jobs filter`)
	}
	evalJS[bool](b, `(() => { const s = document.querySelector("#search"); s.value = "uiw"; s.dispatchEvent(new Event("input")); return true })()`)
	b.waitJS("search results", wait, `!document.querySelector("#search-results").hidden && document.querySelector('#search-results a[href="/ui/jobs/uiweb"]')`)
	b.shot("search")
	evalJS[bool](b, `document.activeElement.blur(), document.dispatchEvent(new KeyboardEvent("keydown", {key: "g"})), document.dispatchEvent(new KeyboardEvent("keydown", {key: "c"})), true`)
	b.waitJS("g c opened the clients", wait, `location.pathname === "/ui/clients" && document.querySelector('#noderows tr[data-node]')`)
	b.shot("clients")

	open("/ui/servers")
	b.waitJS("the servers page", wait, `document.querySelector("#members tbody tr") && document.querySelector("#peers tbody tr") && document.querySelector("#leader").innerText.includes("127.0.0.1")`)
	b.shot("servers")
	open("/ui/evaluations")
	b.waitJS("the evaluations page", wait, `document.querySelectorAll("#evals tbody tr").length >= 2`)
	b.shot("evaluations")
	open("/ui/topology")
	b.waitJS("the topology", wait, `document.querySelector("#topo .node") && document.querySelector("#topo .node").innerText.includes("300 /")`)
	b.shot("topology")

	// Scale the group from the job page: down to one running allocation.
	open("/ui/jobs/uiweb")
	b.waitJS("the scale input", wait, `document.querySelector("#scale-web")`)
	// While the edit's deployment runs, scaling is refused and the page
	// says why; once it is done, the scale goes through.
	if !strings.Contains(evalJS[string](b, `document.querySelector("#latestdep").innerText`), "successful") {
		evalJS[bool](b, `document.querySelector("#scale-web").value = "1", document.querySelector('button[data-act="scale"][data-group="web"]').click(), true`)
		b.waitJS("the refusal's reason", wait, `document.querySelector("#err .act-error") && document.querySelector("#err .act-error").innerText.includes("active deployment") || document.querySelector('#summary tr[data-group="web"] td:nth-child(2)').innerText === "1"`)
	}
	b.waitJS("the deployment successful", wait, `document.querySelector("#latestdep").innerText.includes("successful")`)
	evalJS[bool](b, `document.querySelector("#scale-web").value = "1", document.querySelector('button[data-act="scale"][data-group="web"]').click(), true`)
	b.waitJS("one running allocation", wait, `document.querySelector('#summary tr[data-group="web"] td:nth-child(2)').innerText === "1" && document.querySelector('#summary tr[data-group="web"] .c-running').innerText === "1"`)

	// Stop the job from its page: it turns dead without a reload.
	b.waitJS("the stop button", wait, `document.querySelector("#stopbtn")`)
	evalJS[bool](b, `window.__noReload = true, window.confirm = () => true, document.querySelector("#stopbtn").click(), true`)
	b.waitJS("the job dead", wait, `document.querySelector("#jobhead").innerText.includes("dead") && document.querySelectorAll('#allocs tr[data-status="running"]').length === 0`)
	if !evalJS[bool](b, `window.__noReload === true`) {
		t.Fatal("the page reloaded after stop")
	}
	b.shot("job-dead")

	// A client's eligibility toggles from its page.
	open("/ui/clients/" + nodes[0].ID)
	b.waitJS("the eligibility button", wait, `document.querySelector('button[data-act="eligibility"]')`)
	evalJS[bool](b, `document.querySelector('button[data-act="eligibility"]').click(), true`)
	b.waitJS("the client ineligible", wait, `document.querySelector("#nodehead").innerText.includes("ineligible") && document.querySelector('button[data-act="eligibility"]').innerText === "Mark eligible"`)
	if n, _, err := a.client.Nodes().Info(nodes[0].ID, nil); err != nil || n.SchedulingEligibility != "ineligible" {
		t.Fatalf("the node is not ineligible in the API: %v %v", n, err)
	}
	evalJS[bool](b, `document.querySelector('button[data-act="eligibility"]').click(), true`)
	b.waitJS("the client eligible again", wait, `document.querySelector('button[data-act="eligibility"]').innerText === "Mark ineligible"`)

	// Phone width: the jobs page fits without sideways scrolling.
	b.run("phone viewport", wait, chromedp.EmulateViewport(390, 844))
	open("/ui/jobs")
	b.waitJS("the jobs list at phone width", wait, `document.querySelectorAll("#jobrows tr[data-job]").length === 2`)
	if w := evalJS[float64](b, `document.documentElement.scrollWidth`); w > 392 {
		t.Errorf("at 390 px wide the page is %v px wide", w)
	}
	b.shot("phone-jobs")
}
