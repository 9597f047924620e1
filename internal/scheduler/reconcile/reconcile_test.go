package reconcile

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

var now = time.Unix(1_700_000_000, 0)

func testJob(count int) *structs.Job {
	return &structs.Job{ID: "web", Namespace: "default", Type: "service", JobModifyIndex: 10,
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: count}}}
}

func alloc(job *structs.Job, idx uint, node, status string) *structs.Allocation {
	return &structs.Allocation{
		ID: "a" + string(rune('0'+idx)), Name: structs.AllocName(job.ID, "g", idx), JobID: job.ID, Job: job,
		TaskGroup: "g", NodeID: node, DesiredStatus: "run", ClientStatus: status,
	}
}

// names lists the replacements and the fresh placements' names.
func names(res *Result) string {
	var out []string
	for _, p := range res.Place {
		out = append(out, p.Name)
	}
	for _, f := range res.Fresh {
		for n := range f.Names() {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func stops(ss []Stop) string {
	var out []string
	for _, s := range ss {
		e := s.Alloc.Name
		if s.ClientStatus != "" {
			e += ":" + s.ClientStatus
		}
		out = append(out, e)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestCompute(t *testing.T) {
	job := testJob(3)
	old := testJob(3)
	old.JobModifyIndex = 5
	stoppedJob := testJob(3)
	stoppedJob.Stop = true
	batch := testJob(2)
	batch.Type = "batch"
	limited := testJob(1)
	limited.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour}
	migrating := alloc(job, 1, "n2", "running")
	yes := true
	migrating.DesiredTransition.Migrate = &yes
	rescheduledOnce := alloc(limited, 0, "n1", "failed")
	rescheduledOnce.RescheduleTracker = &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{{RescheduleTime: now.Add(-time.Minute).UnixNano()}}}
	rescheduledLongAgo := alloc(limited, 0, "n1", "failed")
	rescheduledLongAgo.RescheduleTracker = &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{{RescheduleTime: now.Add(-2 * time.Hour).UnixNano()}}}
	serverStopped := alloc(job, 0, "n1", "running")
	serverStopped.DesiredStatus = "stop"

	cases := []struct {
		name        string
		job         *structs.Job
		batch       bool
		allocs      []*structs.Allocation
		tainted     map[string]*structs.Node
		place, stop string
		destructive int
		reschedule  int
	}{
		{name: "fresh job", job: job, place: "web.g[0],web.g[1],web.g[2]"},
		{name: "fill the gap", job: job, allocs: []*structs.Allocation{alloc(job, 0, "n1", "running"), alloc(job, 2, "n1", "running")}, place: "web.g[1]"},
		{name: "steady", job: job, allocs: []*structs.Allocation{alloc(job, 0, "n", "running"), alloc(job, 1, "n", "pending"), alloc(job, 2, "n", "running")}},
		{name: "scale down stops highest", job: testJob(1), allocs: []*structs.Allocation{alloc(job, 0, "n", "running"), alloc(job, 1, "n", "running"), alloc(job, 2, "n", "running")}, stop: "web.g[1],web.g[2]"},
		{name: "count 0 stops all", job: testJob(0), allocs: []*structs.Allocation{alloc(job, 0, "n", "running"), alloc(job, 1, "n", "running")}, stop: "web.g[0],web.g[1]"},
		{name: "job stopped", job: stoppedJob, allocs: []*structs.Allocation{alloc(job, 0, "n", "running"), alloc(job, 1, "n", "complete")}, stop: "web.g[0]"},
		{name: "job purged, lost node marks lost", job: nil, allocs: []*structs.Allocation{alloc(job, 0, "gone", "running")}, tainted: map[string]*structs.Node{"gone": nil}, stop: "web.g[0]:lost"},
		{name: "spec change is destructive", job: job, allocs: []*structs.Allocation{alloc(old, 0, "n", "running"), alloc(old, 1, "n", "running"), alloc(job, 2, "n", "running")}, destructive: 2},
		{name: "lost node replaced", job: job, allocs: []*structs.Allocation{alloc(job, 0, "down", "running"), alloc(job, 1, "n", "running"), alloc(job, 2, "n", "running")},
			tainted: map[string]*structs.Node{"down": {ID: "down", Status: "down"}}, place: "web.g[0]", stop: "web.g[0]:lost"},
		{name: "draining without migrate flag stays", job: job, allocs: []*structs.Allocation{alloc(job, 0, "d", "running"), alloc(job, 1, "d", "running"), alloc(job, 2, "d", "running")},
			tainted: map[string]*structs.Node{"d": {ID: "d", Status: "ready", DrainStrategy: &structs.DrainStrategy{}}}},
		{name: "migrate flag", job: job, allocs: []*structs.Allocation{alloc(job, 0, "n", "running"), migrating, alloc(job, 2, "n", "running")}, place: "web.g[1]", stop: "web.g[1]"},
		{name: "service complete is replaced", job: job, allocs: []*structs.Allocation{alloc(job, 0, "n", "complete"), alloc(job, 1, "n", "running"), alloc(job, 2, "n", "running")}, place: "web.g[0]"},
		{name: "batch complete never re-run", job: batch, batch: true, allocs: []*structs.Allocation{alloc(batch, 0, "n", "complete"), alloc(batch, 1, "n", "running")}},
		{name: "batch old-version complete re-runs", job: batch, batch: true, allocs: []*structs.Allocation{alloc(old, 0, "n", "complete"), alloc(batch, 1, "n", "complete")}, place: "web.g[0]"},
		{name: "failed without policy rescheduled", job: job, allocs: []*structs.Allocation{alloc(job, 0, "n", "failed"), alloc(job, 1, "n", "running"), alloc(job, 2, "n", "running")}, place: "web.g[0]", reschedule: 1},
		{name: "failed with attempts left", job: limited, allocs: []*structs.Allocation{rescheduledLongAgo}, place: "web.g[0]", reschedule: 1},
		{name: "failed out of attempts keeps slot", job: limited, allocs: []*structs.Allocation{rescheduledOnce}},
		{name: "server-terminal ignored", job: testJob(1), allocs: []*structs.Allocation{serverStopped}, place: "web.g[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Compute(Input{Job: c.job, Batch: c.batch, Allocs: c.allocs, TaintedNodes: c.tainted, Now: now})
			if got := names(res); got != c.place {
				t.Errorf("place = %q, want %q", got, c.place)
			}
			if got := stops(res.Stop); got != c.stop {
				t.Errorf("stop = %q, want %q", got, c.stop)
			}
			if len(res.Destructive) != c.destructive {
				t.Errorf("destructive = %d, want %d", len(res.Destructive), c.destructive)
			}
			n := 0
			for _, p := range res.Place {
				if p.Reschedule {
					n++
					if p.PreviousAlloc == nil {
						t.Error("reschedule without previous alloc")
					}
				}
			}
			if n != c.reschedule {
				t.Errorf("reschedules = %d, want %d", n, c.reschedule)
			}
		})
	}
}

func TestComputeDesiredTGUpdates(t *testing.T) {
	job := testJob(2)
	old := testJob(2)
	old.JobModifyIndex = 1
	res := Compute(Input{Job: job, Allocs: []*structs.Allocation{alloc(old, 0, "n", "running")}, Now: now})
	du := res.DesiredTGUpdates["g"]
	if du == nil || du.Place != 1 || du.DestructiveUpdate != 1 || du.Stop != 0 {
		t.Fatalf("DesiredTGUpdates = %+v", du)
	}
	if res.Destructive[0].Name != "web.g[0]" {
		t.Fatalf("destructive keeps the name: %q", res.Destructive[0].Name)
	}
}

// A group of a billion asks for one Fresh entry: nothing is built per
// allocation until the scheduler names it, and names come lowest free
// index first, skipping the indexes kept allocations hold.
func TestComputeHugeCountIsLazy(t *testing.T) {
	job := testJob(1_000_000_000)
	res := Compute(Input{Job: job, Allocs: []*structs.Allocation{alloc(job, 1, "n", "running")}, Now: now})
	if len(res.Place) != 0 || len(res.Fresh) != 1 || res.Fresh[0].Count != 999_999_999 {
		t.Fatalf("place %d, fresh %+v", len(res.Place), res.Fresh)
	}
	if du := res.DesiredTGUpdates["g"]; du.Place != 999_999_999 || du.Ignore != 1 {
		t.Fatalf("DesiredTGUpdates = %+v", du)
	}
	var got []string
	for n := range res.Fresh[0].Names() {
		if got = append(got, n); len(got) == 3 {
			break
		}
	}
	if strings.Join(got, ",") != "web.g[0],web.g[2],web.g[3]" {
		t.Fatalf("first names = %v", got)
	}
}
