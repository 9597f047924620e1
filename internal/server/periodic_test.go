package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

func periodicParent(id, spec string, overlap bool) *structs.Job {
	j := testJob(id, 1)
	j.Type = structs.JobTypeBatch
	j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	j.Periodic = &structs.PeriodicConfig{Spec: &spec, ProhibitOverlap: &overlap}
	return j
}

func children(t *testing.T, s *Server, parentID string) []*structs.Job {
	t.Helper()
	iter, err := s.State().JobsByIDPrefix(nil, "default", parentID+"/")
	if err != nil {
		t.Fatal(err)
	}
	var out []*structs.Job
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if j := raw.(*structs.Job); j.ParentID == parentID {
			out = append(out, j)
		}
	}
	return out
}

func TestPeriodicForceAndTracking(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	parent := periodicParent("report", "0 0 1 1 *", false)
	if resp := register(t, s, parent); resp.EvalID != "" {
		t.Fatalf("periodic parent got an eval %s; parents must not be scheduled", resp.EvalID)
	}
	waitFor(t, 5*time.Second, "dispatcher tracks parent", func() bool {
		_, ok := s.periodic.NextLaunch("default", "report")
		return ok
	})
	l, err := s.State().PeriodicLaunchByID(nil, "default", "report")
	if err != nil || l == nil {
		t.Fatalf("no periodic launch recorded for a new parent: %v", err)
	}

	var resp structs.PeriodicForceResponse
	if err := s.RPC("Periodic.Force", &structs.PeriodicForceRequest{JobID: "report"}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" || resp.EvalCreateIndex == 0 || resp.Index == 0 {
		t.Fatalf("force reply incomplete: %+v", resp)
	}
	ev := evalDone(t, s, resp.EvalID)
	if ev.TriggeredBy != structs.EvalTriggerPeriodicJob {
		t.Fatalf("eval triggered by %q, want periodic-job", ev.TriggeredBy)
	}
	kids := children(t, s, "report")
	if len(kids) != 1 {
		t.Fatalf("%d children after force, want 1", len(kids))
	}
	child := kids[0]
	if !strings.HasPrefix(child.ID, "report/periodic-") || child.Periodic != nil || child.ID != ev.JobID {
		t.Fatalf("child %q periodic=%v eval job %q", child.ID, child.Periodic, ev.JobID)
	}
	when, _ := structs.PeriodicLaunchTime(child.ID)
	if l, _ := s.State().PeriodicLaunchByID(nil, "default", "report"); l == nil || !l.Launch.Equal(when) {
		t.Fatalf("launch record %+v, want %v", l, when)
	}
	waitFor(t, 10*time.Second, "child placed and counted", func() bool {
		sum, _ := s.State().JobSummaryByID(nil, "default", "report")
		return sum != nil && sum.Children != nil && sum.Children.Pending+sum.Children.Running+sum.Children.Dead == 1
	})

	// Errors a user can act on.
	for _, tc := range []struct {
		id, want string
	}{{"nope", "job not found"}, {"", "missing job ID"}} {
		err := s.RPC("Periodic.Force", &structs.PeriodicForceRequest{JobID: tc.id}, &resp)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("force %q: err %v, want %q", tc.id, err, tc.want)
		}
	}
	register(t, s, testJob("svc", 0))
	if err := s.RPC("Periodic.Force", &structs.PeriodicForceRequest{JobID: "svc"}, &resp); err == nil || !strings.Contains(err.Error(), "non-periodic") {
		t.Fatalf("force of a service job: %v", err)
	}

	// Stopping and purging the parent removes it from the dispatcher.
	var dr structs.JobDeregisterResponse
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "report", Purge: true}, &dr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "dispatcher forgets purged parent", func() bool {
		_, ok := s.periodic.NextLaunch("default", "report")
		return !ok
	})
	if l, _ := s.State().PeriodicLaunchByID(nil, "default", "report"); l != nil {
		t.Fatalf("launch record survives purge: %+v", l)
	}
}

// The dispatcher fires on its clock, holds launches back while a child is
// alive under prohibit_overlap, and catches up after leadership returns.
func TestPeriodicDispatcherOnServer(t *testing.T) {
	fc := clock.NewFake(time.Now())
	s := testServer(t, func(c *Config) { c.PeriodicClock = fc })
	testNode(t, s, 4000, 4096)
	parent := periodicParent("tick", "* * * * *", true)
	parent.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"600"}}
	register(t, s, parent)
	waitFor(t, 5*time.Second, "parent tracked", func() bool { _, ok := s.periodic.NextLaunch("default", "tick"); return ok })

	fc.Advance(time.Minute)
	waitFor(t, 5*time.Second, "first child", func() bool { return len(children(t, s, "tick")) == 1 })
	first := children(t, s, "tick")[0]
	waitFor(t, 10*time.Second, "first child running", func() bool {
		j, _ := s.State().JobByID(nil, "default", first.ID)
		return j != nil && j.Status == structs.JobStatusRunning
	})

	// The child sleeps: prohibit_overlap skips the next two launches.
	fc.Advance(2 * time.Minute)
	if n := len(children(t, s, "tick")); n != 1 {
		t.Fatalf("%d children while the first still runs, want 1 (prohibit_overlap)", n)
	}

	// The first child is stopped; then leadership is lost: nothing fires.
	// Regained after missed launches: exactly one catch-up launch.
	var dr structs.JobDeregisterResponse
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: first.ID}, &dr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "first child dead", func() bool {
		j, _ := s.State().JobByID(nil, "default", first.ID)
		return j != nil && j.Status == structs.JobStatusDead
	})
	s.revokeLeadership()
	fc.Advance(5 * time.Minute)
	if n := len(children(t, s, "tick")); n != 1 {
		t.Fatalf("a non-leader launched: %d children", n)
	}
	s.periodic.SetEnabled(true)
	s.restorePeriodicDispatcher(make(chan struct{}), s.leaderGen.Load())
	kids := children(t, s, "tick")
	if len(kids) != 2 {
		t.Fatalf("%d children after regaining leadership, want 2 (one catch-up)", len(kids))
	}
	sum, _ := s.State().JobSummaryByID(nil, "default", "tick")
	if sum.Children == nil || sum.Children.Dead != 1 || sum.Children.Pending+sum.Children.Running != 1 {
		t.Fatalf("children summary %+v, want 1 dead and 1 live", sum.Children)
	}
}
