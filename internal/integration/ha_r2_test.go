package integration

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// r2Job is one job of the R2 load generator: the counts its group may have
// now. The last acknowledged count is certain; a later write that failed
// may still have committed (its answer was lost with the leader), so its
// count is possible too.
type r2Job struct {
	acked    bool
	possible map[int]bool
}

// TestR2LeaderKilledEvery5s is reliability figure R2 (issue #14): three
// servers and two client agents; the leader is SIGKILLed every 5 s (and
// restarted on its data dir) for DROVER_R2_DURATION (default 2m) while a
// load generator registers and scales jobs through every server. At the
// end: no acknowledged write is lost, no allocation name runs twice, every
// evaluation is terminal; the time each kill took to a new leader is
// reported (p50/p99). Runs only with DROVER_R2=1.
func TestR2LeaderKilledEvery5s(t *testing.T) {
	if os.Getenv("DROVER_R2") == "" {
		t.Skip("R2 runs for minutes: set DROVER_R2=1 (DROVER_R2_DURATION=2m)")
	}
	duration := 2 * time.Minute
	if v := os.Getenv("DROVER_R2_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("DROVER_R2_DURATION=%q: want a duration", v)
		}
		duration = d
	}
	c := startHACluster(t, 2)

	var mu sync.Mutex
	jobs := map[string]*r2Job{}
	var acks, failures int
	reasons := map[string]int{} // why writes failed (first 60 characters)
	reason := func(err error) {
		r := err.Error()
		switch {
		case strings.Contains(r, "dial tcp"), strings.Contains(r, "EOF"), strings.Contains(r, "read tcp"),
			strings.Contains(r, "connection reset"):
			r = "the server asked was killed or restarting"
		case len(r) > 80:
			r = r[:80]
		}
		reasons[r]++
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w, s := range c.servers {
		wg.Add(1)
		go func(w int, s *agent) {
			defer wg.Done()
			var mine []string
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				// Through every server in turn (the one asked may be dead
				// or restarting: then the write fails and the next goes
				// to another).
				cl := c.servers[(w+i)%len(c.servers)].client
				if len(mine) < 10 && i%3 == 0 {
					id := fmt.Sprintf("r2-%d-%d", w, len(mine))
					job := rawExecJob(id, "service", 1, "sleep 600")
					// No deployments: a scale is refused while one runs.
					job.Update = &api.UpdateStrategy{MaxParallel: ptr(0)}
					mu.Lock()
					jobs[id] = &r2Job{possible: map[int]bool{1: true}}
					mu.Unlock()
					mine = append(mine, id)
					_, _, err := cl.Jobs().Register(job, nil)
					mu.Lock()
					if err == nil {
						jobs[id].acked = true
						acks++
					} else {
						failures++
						reason(err)
					}
					mu.Unlock()
					continue
				}
				if len(mine) == 0 {
					continue
				}
				id := mine[i%len(mine)]
				count := 1 + i%3
				mu.Lock()
				j := jobs[id]
				if !j.acked {
					mu.Unlock()
					continue // its registration failed: it may not exist
				}
				j.possible[count] = true
				mu.Unlock()
				_, _, err := cl.Jobs().Scale(id, "g", &count, "r2", false, nil, nil)
				mu.Lock()
				if err == nil {
					// Certain now: earlier ambiguous counts are superseded.
					j.acked = true
					j.possible = map[int]bool{count: true}
					acks++
				} else {
					failures++
					reason(err)
				}
				mu.Unlock()
			}
		}(w, s)
	}

	var toLeader []time.Duration
	kills := 0
	end := time.Now().Add(duration)
	for time.Now().Before(end) {
		round := time.Now()
		leader := c.waitLeader(nil, 60*time.Second)
		leader.kill()
		killed := time.Now()
		var next *agent
		for next == nil {
			if time.Since(killed) > 60*time.Second {
				t.Fatalf("kill %d: no new leader within 60s", kills+1)
			}
			var addr string
			agreed := true
			for _, s := range c.alive(leader) {
				l, err := s.client.Status().Leader()
				if err != nil || l == "" || (addr != "" && l != addr) {
					agreed = false
					break
				}
				addr = l
			}
			if agreed && addr != "" {
				for _, s := range c.alive(leader) {
					if addr == fmt.Sprintf("127.0.0.1:%d", s.rpc) {
						next = s
					}
				}
			}
			if next == nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
		toLeader = append(toLeader, time.Since(killed))
		kills++
		leader.start() // the same data dir and ports: it rejoins
		c.waitLeader(nil, 60*time.Second)
		if rest := 5*time.Second - time.Since(round); rest > 0 {
			time.Sleep(rest)
		}
	}
	close(stop)
	wg.Wait()

	// Settle, then check every acknowledged write and the allocations.
	leader := c.waitLeader(nil, 60*time.Second)
	cl := leader.client
	var lost []string
	var twice []string
	mu.Lock()
	defer mu.Unlock()
	waitFor(t, 120*time.Second, "every job at its count with its allocations running, every evaluation terminal", func() bool {
		lost, twice = nil, nil
		for id, j := range jobs {
			job, _, err := cl.Jobs().Info(id, nil)
			if err != nil {
				if j.acked {
					lost = append(lost, id+" (missing)")
				}
				continue
			}
			count := *job.TaskGroups[0].Count
			if j.acked && !j.possible[count] {
				lost = append(lost, fmt.Sprintf("%s (count %d, acknowledged %v)", id, count, j.possible))
			}
			allocs, _, err := cl.Jobs().Allocations(id, false, nil)
			if err != nil {
				return false
			}
			names := map[string]int{}
			running := 0
			for _, a := range allocs {
				if a.ClientStatus == "running" {
					names[a.Name]++
					running++
				}
			}
			for n, k := range names {
				if k > 1 {
					twice = append(twice, n)
				}
			}
			if running != count {
				return false
			}
		}
		evals, _, err := cl.Evaluations().List(&api.QueryOptions{})
		if err != nil {
			return false
		}
		for _, e := range evals {
			switch e.Status {
			case "complete", "failed", "canceled":
			default:
				return false
			}
		}
		return len(lost) == 0
	})
	if len(lost) > 0 || len(twice) > 0 {
		t.Fatalf("acknowledged writes lost: %v; allocation names running twice: %v", lost, twice)
	}
	nodes, _, err := cl.Nodes().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Status != "ready" {
			t.Errorf("node %s is %s after the kills", n.Name, n.Status)
		}
	}
	t.Logf("R2: why writes failed: %v", reasons)
	sort.Slice(toLeader, func(i, j int) bool { return toLeader[i] < toLeader[j] })
	pct := func(p float64) time.Duration { return toLeader[min(len(toLeader)-1, int(p*float64(len(toLeader))))] }
	t.Logf("R2: %d leader kills in %s; %d acknowledged writes (%d failed, retried by the next), %d jobs, 0 lost, 0 allocation names running twice, every evaluation terminal; time to new leader p50 %s, p99 %s, max %s",
		kills, duration, acks, failures, len(jobs), pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), toLeader[len(toLeader)-1].Round(time.Millisecond))
}
