package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// loaded is true once the page shows no "Loading…" anywhere in <main>.
const loaded = `document.querySelector("main") && !document.querySelector("main").innerText.includes("Loading…") && document.querySelector("main").innerText.trim() !== ""`

// Navigating fast through every kind of page, inside the app (each
// navigation ends the page before it while its queries are in flight) and
// with full page loads, always ends on a page that finished loading and
// shows the page asked for last.
func TestUIStressNavigation(t *testing.T) {
	b := newBrowser(t, 1280, 800)
	a := devAgent(t)
	const wait = 60 * time.Second
	if _, _, err := a.client.Jobs().Register(rawExecJob("busy", "service", 2, "echo busy; sleep 300"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, wait, "busy running", func() bool {
		l := a.allocsOf("busy")
		return len(l) == 2 && l[0].ClientStatus == "running" && l[1].ClientStatus == "running"
	})
	alloc := a.allocsOf("busy")[0]
	nodes, _, err := a.client.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	paths := []string{"/ui/jobs", "/ui/jobs/busy", "/ui/jobs/busy/allocations", "/ui/jobs/busy/evaluations",
		"/ui/jobs/busy/deployments", "/ui/jobs/busy/versions", "/ui/jobs/busy/definition", "/ui/allocations/" + alloc.ID,
		"/ui/allocations/" + alloc.ID + "/t/logs", "/ui/allocations/" + alloc.ID + "/fs", "/ui/clients", "/ui/clients/" + nodes[0].ID,
		"/ui/servers", "/ui/evaluations", "/ui/topology", "/ui/settings/tokens", "/ui/jobs/run"}
	list := `[` + strings.Join(func() []string {
		q := make([]string, len(paths))
		for i, p := range paths {
			q[i] = jsString(p)
		}
		return q
	}(), ",") + `]`
	b.run("open", wait, chromedp.Navigate(a.url("/ui/jobs")))
	b.waitJS("the jobs page", wait, loaded)
	for round := range 3 {
		// Round 0: every navigation at once; then 15 and 40 ms apart, so
		// some land while the page before is between its first answers.
		gap := []int{0, 15, 40}[round]
		evalJS[bool](b, fmt.Sprintf(`(() => { window.__done = false; const l = %s; let i = 0;
			const step = () => { const p = l[(i * 7 + %d) %% l.length]; history.pushState(null, "", p); dispatchEvent(new PopStateEvent("popstate")); if (++i < 50) { %d ? setTimeout(step, %d) : step(); } else window.__done = p; };
			step(); return true })()`, list, round, gap, gap))
		b.waitJS("the navigations", wait, `window.__done`)
		last := evalJS[string](b, `window.__done`)
		b.waitJS("the last page ("+last+") loaded", wait, `location.pathname === `+jsString(last)+` && (`+loaded+`)`)
	}
	// Full page loads one after the other without waiting for any.
	for i := range 12 {
		p := paths[(i*5)%len(paths)]
		ctx, cancel := context.WithTimeout(b.ctx, wait)
		_ = chromedp.Do(ctx, chromedp.Navigate(a.url(p)))
		cancel()
	}
	last := paths[(11*5)%len(paths)]
	b.waitJS("the last full load ("+last+")", wait, `location.pathname === `+jsString(last)+` && (`+loaded+`)`)

	// A client's short ID, as the CLI prints it, opens the client.
	b.run("open the client by its short ID", wait, chromedp.Navigate(a.url("/ui/clients/"+nodes[0].ID[:8])))
	b.waitJS("the client's page", wait, `location.pathname === `+jsString("/ui/clients/"+nodes[0].ID)+` && document.querySelector('#nodehead [data-act="drain"]')`)
}
