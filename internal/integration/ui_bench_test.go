package integration

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/tools/nodesim/sim"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestUIBench measures the UI in the browser at scale (only with
// DROVER_UI_BENCH=1): the jobs page with DROVER_UI_BENCH_JOBS (10,000)
// jobs and a job's allocations page with DROVER_UI_BENCH_ALLOCS (1,000)
// allocations on simulated nodes: time from navigation to the data on
// screen, and from a change in the API to the page showing it (a blocking
// query returning, no reload).
//
//	DROVER_UI_BENCH=1 go test -count=1 -v -run TestUIBench ./internal/integration/
func TestUIBench(t *testing.T) {
	if os.Getenv("DROVER_UI_BENCH") == "" {
		t.Skip("set DROVER_UI_BENCH=1 to measure the UI at scale")
	}
	nJobs := envInt("DROVER_UI_BENCH_JOBS", 10000)
	nAllocs := envInt("DROVER_UI_BENCH_ALLOCS", 1000)
	b := newBrowser(t, 1280, 800)
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"log_level": "WARN"})
	a.waitReady(true)

	s, err := sim.New(sim.Config{Servers: []string{fmt.Sprintf("127.0.0.1:%d", a.rpc)}, Nodes: 50, RunDelay: 50 * time.Millisecond, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	onSim := []*api.Constraint{{LTarget: "${node.unique.name}", Operand: "regexp", RTarget: "^sim-"}}

	// nJobs jobs of no allocations (what is measured is the list).
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= nJobs {
					return
				}
				j := rawExecJob(fmt.Sprintf("bench-%05d", i), "service", 0, "true")
				j.Constraints = onSim
				if _, _, err := a.client.Jobs().Register(j, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("registered %d jobs in %s", nJobs, time.Since(start).Round(time.Millisecond))

	// measure opens path and reports when readyJS first held, in the
	// page's clock (ms since navigation start; polled every 10 ms).
	measure := func(what, path, readyJS string) {
		t.Helper()
		b.run("open "+path, 2*time.Minute, chromedp.Navigate(a.url(path)))
		deadline := time.Now().Add(2 * time.Minute)
		for {
			at := evalJS[float64](b, `(`+readyJS+`) ? performance.now() : 0`)
			if at > 0 {
				// Where the time went: the API reads' own timings.
				api := evalJS[string](b, `performance.getEntriesByType("resource").filter(e => e.name.includes("/v1/")).map(e => new URL(e.name).pathname + " " + Math.round(e.startTime) + "+" + Math.round(e.responseEnd - e.startTime) + "ms " + Math.round(e.transferSize / 1024) + "KiB").join(", ")`)
				t.Logf("FIGURE %s: on screen %.0f ms after navigation start (API reads, start+duration: %s)", what, at, api)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\n%s", what, b.text())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// liveUpdate installs an observer for cond, makes the change, and
	// reports how long the page took to show it.
	liveUpdate := func(what, cond string, change func()) {
		t.Helper()
		evalJS[bool](b, `(() => { window.__seen = 0; const check = () => { if (!window.__seen && (`+cond+`)) window.__seen = Date.now(); }; new MutationObserver(check).observe(document.querySelector("main"), {subtree: true, childList: true, characterData: true, attributes: true}); return true })()`)
		t0 := time.Now().UnixMilli()
		change()
		b.waitJS(what, 2*time.Minute, `window.__seen > 0`)
		seen := evalJS[float64](b, `window.__seen`)
		t.Logf("FIGURE %s: shown %d ms after the API call was made", what, int64(seen)-t0)
	}

	measure(fmt.Sprintf("jobs page, %d jobs (cold browser cache)", nJobs), "/ui/jobs", `document.querySelectorAll("#jobrows tr[data-job]").length === 50`)
	measure(fmt.Sprintf("jobs page, %d jobs", nJobs), "/ui/jobs", `document.querySelectorAll("#jobrows tr[data-job]").length === 50`)
	liveUpdate("jobs page live update (priority of a listed job)", `(() => { const r = document.querySelector('#jobrows tr[data-job="bench-00000"]'); return r && r.children[4].innerText === "77" })()`, func() {
		j, _, err := a.client.Jobs().Info("bench-00000", nil)
		if err != nil {
			t.Fatal(err)
		}
		j.Priority = ptr(77)
		if _, _, err := a.client.Jobs().Register(j, nil); err != nil {
			t.Fatal(err)
		}
	})
	measure("jobs page, a page in the middle", fmt.Sprintf("/ui/jobs?next_token=default%%2Fbench-%05d&prev=-", nJobs/2), `document.querySelectorAll("#jobrows tr[data-job]").length === 50`)

	// One job of nAllocs allocations, running on the simulated nodes.
	big := rawExecJob("big", "service", nAllocs, "true")
	big.Constraints = onSim
	big.Update = &api.UpdateStrategy{MaxParallel: ptr(0)} // no deployment: scaling is allowed at once
	if _, _, err := a.client.Jobs().Register(big, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the big job running", func() bool {
		sum, _, err := a.client.Jobs().Summary("big", nil)
		return err == nil && sum.Summary["g"].Running == nAllocs
	})
	measure(fmt.Sprintf("job allocations page, %d allocations", nAllocs), "/ui/jobs/big/allocations", fmt.Sprintf(`document.querySelectorAll('#allocs tr[data-status="running"]').length === %d`, nAllocs))
	liveUpdate("job allocations page live update (scale +1)", fmt.Sprintf(`document.querySelectorAll("#allocs tbody tr").length === %d`, nAllocs+1), func() {
		if _, _, err := a.client.Jobs().Scale("big", "g", ptr(nAllocs+1), "bench", false, nil, nil); err != nil {
			t.Fatal(err)
		}
	})
	measure(fmt.Sprintf("job overview, %d allocations", nAllocs), "/ui/jobs/big", fmt.Sprintf(`document.querySelector('#summary .c-running') && +document.querySelector('#summary .c-running').innerText >= %d`, nAllocs))
	b.shot("bench-job-allocations")
}
