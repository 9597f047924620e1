package reconcile

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Each step of computeGroup alone, on the sets it is handed.

func namesOf(s allocSet) string {
	var out []string
	for _, a := range s {
		out = append(out, a.ID)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestClassify(t *testing.T) {
	j := jobV(1, 3)
	disc := jobV(1, 3, func(j *structs.Job) {
		j.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: ptr(time.Hour)}
	})
	legacy := jobV(1, 3, func(j *structs.Job) { j.TaskGroups[0].MaxClientDisconnect = ptr(time.Hour) })
	tainted := map[string]*structs.Node{
		"down":  {ID: "down", Status: structs.NodeStatusDown},
		"gone":  nil,
		"disc":  {ID: "disc", Status: structs.NodeStatusDisconnected},
		"drain": {ID: "drain", Status: structs.NodeStatusReady, DrainStrategy: &structs.DrainStrategy{}},
		"back":  {ID: "back", Status: structs.NodeStatusReady},
	}
	mk := func(job *structs.Job, node, client string, mut ...func(*structs.Allocation)) *structs.Allocation {
		a := alloc(job, 0, node, client)
		for _, m := range mut {
			m(a)
		}
		return a
	}
	wasUnknown := func(ago time.Duration) func(*structs.Allocation) {
		return func(a *structs.Allocation) {
			a.AllocStates = []*structs.AllocState{{Field: "ClientStatus", Value: "unknown", Time: now.Add(-ago)}}
		}
	}
	stopped := func(a *structs.Allocation) { a.DesiredStatus = "stop" }
	migrate := func(a *structs.Allocation) { a.DesiredTransition.Migrate = ptr(true) }
	canary := func(a *structs.Allocation) { a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true} }
	cases := []struct {
		name   string
		job    *structs.Job
		a      *structs.Allocation
		bucket string
	}{
		{"running on a fine node", j, mk(j, "n1", "running"), "untainted"},
		{"running on a draining node", j, mk(j, "drain", "running"), "untainted"},
		{"drain asked to migrate", j, mk(j, "drain", "running", migrate), "migrate"},
		{"node down", j, mk(j, "down", "running"), "lost"},
		{"node gone", j, mk(j, "gone", "running"), "lost"},
		{"failed: sorted out by reschedule", j, mk(j, "n1", "failed"), "untainted"},
		{"complete on a down node", j, mk(j, "down", "complete"), "untainted"},
		{"terminal canary asked to migrate", j, mk(j, "n1", "complete", canary, migrate), "migrate"},
		{"disconnected, no disconnect block", j, mk(j, "disc", "running"), "lost"},
		{"disconnected, within lost_after", disc, mk(disc, "disc", "running"), "disconnecting"},
		{"disconnected, legacy max_client_disconnect", legacy, mk(legacy, "disc", "running"), "disconnecting"},
		{"disconnected while pending", disc, mk(disc, "disc", "pending"), "lost"},
		{"unknown within the window", disc, mk(disc, "disc", "unknown", wasUnknown(time.Minute)), "untainted"},
		{"unknown past the window", disc, mk(disc, "disc", "unknown", wasUnknown(2*time.Hour)), "expiring"},
		{"back and running", disc, mk(disc, "back", "running", wasUnknown(time.Minute)), "reconnecting"},
		{"back, expired meanwhile", disc, mk(disc, "back", "running", wasUnknown(2*time.Hour)), "expiring"},
		{"failed while disconnected", disc, mk(disc, "n1", "failed", wasUnknown(time.Minute)), "reconnecting"},
		{"stopped replacement of a disconnected alloc", disc, mk(disc, "n1", "complete", stopped), "ignore"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := classify(newAllocSet(c.a), c.job.TaskGroups[0], tainted, now)
			got := map[string]allocSet{"untainted": b.untainted, "migrate": b.migrate, "lost": b.lost,
				"disconnecting": b.disconnecting, "reconnecting": b.reconnecting, "ignore": b.ignore, "expiring": b.expiring}
			for name, set := range got {
				if (len(set) == 1) != (name == c.bucket) {
					t.Errorf("bucket %s holds %d, want it in %s", name, len(set), c.bucket)
				}
			}
		})
	}
}

func TestFilterByRescheduleable(t *testing.T) {
	svc := jobV(1, 3)
	batch := jobV(1, 3, asBatch)
	dep := &structs.Deployment{ID: "dep", Status: structs.DeploymentStatusRunning}
	mk := func(job *structs.Job, id string, mut ...func(*structs.Allocation)) *structs.Allocation {
		a := alloc(job, 0, "n1", "running")
		a.ID = id
		for _, m := range mut {
			m(a)
		}
		return a
	}
	failed := func(ago time.Duration) func(*structs.Allocation) {
		return func(a *structs.Allocation) { failedAt(a, now.Add(-ago)) }
	}
	cases := []struct {
		name              string
		job               *structs.Job
		a                 *structs.Allocation
		untainted, nowSet string
		later             int
	}{
		{"running", svc, mk(svc, "a"), "a", "", 0},
		{"failed, due", svc, mk(svc, "a", failed(time.Minute)), "", "a", 0},
		{"failed, due within a second", svc, mk(svc, "a", failed(30*time.Second-500*time.Millisecond)), "", "a", 0},
		{"failed, not yet due", svc, mk(svc, "a", failed(0)), "a", "", 1},
		{"failed, forced", svc, mk(svc, "a", failed(0), func(a *structs.Allocation) { a.DesiredTransition.ForceReschedule = ptr(true) }), "", "a", 0},
		{"failed, this eval is its follow-up", svc, mk(svc, "a", failed(0), func(a *structs.Allocation) { a.FollowupEvalID = "e" }), "", "a", 0},
		{"failed, another follow-up pending", svc, mk(svc, "a", failed(0), func(a *structs.Allocation) { a.FollowupEvalID = "x" }), "a", "", 0},
		{"failed and replaced", svc, mk(svc, "a", failed(time.Hour), func(a *structs.Allocation) { a.NextAllocation = "b" }), "", "", 0},
		{"service complete: left out", svc, mk(svc, "a", func(a *structs.Allocation) { a.ClientStatus = "complete" }), "", "", 0},
		{"service stopped: left out", svc, mk(svc, "a", func(a *structs.Allocation) { a.DesiredStatus = "stop" }), "", "", 0},
		{"in an active deployment, not allowed", svc, mk(svc, "a", failed(time.Hour), func(a *structs.Allocation) { a.DeploymentID = "dep" }), "a", "", 0},
		{"in an active deployment, allowed", svc, mk(svc, "a", failed(time.Hour), func(a *structs.Allocation) {
			a.DeploymentID = "dep"
			a.DesiredTransition.Reschedule = ptr(true)
		}), "", "a", 0},
		{"batch complete counts", batch, mk(batch, "a", func(a *structs.Allocation) { a.ClientStatus = "complete" }), "a", "", 0},
		{"batch complete and stopped counts", batch, mk(batch, "a", func(a *structs.Allocation) { a.ClientStatus = "complete"; a.DesiredStatus = "stop" }), "a", "", 0},
		{"batch failed and stopped: left out", batch, mk(batch, "a", failed(time.Hour), func(a *structs.Allocation) { a.DesiredStatus = "stop" }), "", "", 0},
		{"batch failed, due", batch, mk(batch, "a", failed(time.Minute)), "", "a", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filterByRescheduleable(c.job.Type == "batch", false, newAllocSet(c.a), now, "e", dep, c.job, c.job.TaskGroups[0])
			if namesOf(out.untainted) != c.untainted || namesOf(out.now) != c.nowSet || len(out.later) != c.later {
				t.Fatalf("untainted %q now %q later %d; want %q %q %d", namesOf(out.untainted), namesOf(out.now), len(out.later),
					c.untainted, c.nowSet, c.later)
			}
		})
	}
}

func TestNameIndex(t *testing.T) {
	j := jobV(1, 5)
	set := newAllocSet(alloc(j, 0, "n", "running"), alloc(j, 2, "n", "running"), alloc(j, 4, "n", "running"))
	n := newNameIndex("web", "g", 5, set)
	hi := n.highest(2)
	if _, ok := hi["web.g[4]"]; !ok || len(hi) != 2 {
		t.Fatalf("highest %v", hi)
	}
	if _, ok := hi["web.g[2]"]; !ok {
		t.Fatalf("highest %v", hi)
	}
	f := n.fresh(j.TaskGroups[0], 3)
	var got []string
	for name := range f.Names() {
		got = append(got, name)
	}
	if strings.Join(got, ",") != "web.g[1],web.g[3],web.g[5]" {
		t.Fatalf("fresh %v", got)
	}
	// Canaries take the names of allocations being replaced first, then
	// free names.
	destructive := newAllocSet(alloc(j, 2, "n", "running"), alloc(j, 4, "n", "running"))
	existing := newAllocSet(func() *structs.Allocation { a := alloc(j, 2, "n", "running"); a.ID = "c"; return a }())
	if got := n.nextCanaries(2, existing, destructive); strings.Join(got, ",") != "web.g[4],web.g[1]" {
		t.Fatalf("canaries %v", got)
	}
}

func TestComputeStop(t *testing.T) {
	j := jobV(1, 2)
	r := &reconciler{job: j, res: &Result{}}
	untainted := newAllocSet(alloc(j, 0, "n", "running"), alloc(j, 1, "n", "running"), alloc(j, 2, "n", "running"))
	unknown := alloc(j, 3, "n", "unknown")
	untainted[unknown.ID] = unknown
	migrate := newAllocSet(alloc(j, 5, "d", "running"))
	lost := newAllocSet(alloc(j, 7, "x", "running"))
	names := newNameIndex("web", "g", 2, untainted.union(migrate, lost))
	stop := r.computeStop(j.TaskGroups[0], names, &untainted, &migrate, lost, nil, false, nil)
	// 3 known untainted + 1 migrating over a count of 2: the migrating one
	// goes first, then the highest name; the unknown one is neither counted
	// nor stopped; the lost one is always stopped.
	if namesOf(stop) != "v1-2,v1-5,v1-7" || len(migrate) != 0 || namesOf(untainted) != "v1-0,v1-1,v1-3" {
		t.Fatalf("stop %s untainted %s migrate %s", namesOf(stop), namesOf(untainted), namesOf(migrate))
	}
	var lostStop *Stop
	for i := range r.res.Stop {
		if r.res.Stop[i].Alloc.ID == "v1-7" {
			lostStop = &r.res.Stop[i]
		}
	}
	if lostStop == nil || lostStop.ClientStatus != "lost" {
		t.Fatalf("lost alloc not stopped as lost: %+v", r.res.Stop)
	}
}

func TestComputeUpdates(t *testing.T) {
	v1 := jobV(1, 4)
	v2 := jobV(2, 4, withUpdate(2, 0))
	doesNotFit := alloc(v1, 2, "full", "running")
	r := &reconciler{job: v2, res: &Result{}, in: Input{Update: func(a *structs.Allocation, job *structs.Job, tg *structs.TaskGroup) (bool, *structs.Allocation) {
		if a.NodeID == "full" {
			return true, nil
		}
		u := a.CopySkipJob()
		u.Job = job
		return false, u
	}}}
	finished := alloc(v1, 3, "n", "complete")
	untainted := newAllocSet(alloc(v2, 0, "n", "running"), alloc(v1, 1, "n", "running"), doesNotFit, finished)
	ignore, inplace, destructive := r.computeUpdates(v2.TaskGroups[0], untainted)
	if namesOf(ignore) != "v1-3,v2-0" || len(inplace) != 1 || inplace[0].ID != "v1-1" || inplace[0].Job != v2 ||
		namesOf(destructive) != "v1-2" {
		t.Fatalf("ignore %s inplace %d destructive %s", namesOf(ignore), len(inplace), namesOf(destructive))
	}
	// A task change is destructive without asking the UpdateFn.
	v3 := jobV(3, 4, withCommand("/other"))
	r.job = v3
	_, inplace, destructive = r.computeUpdates(v3.TaskGroups[0], newAllocSet(alloc(v2, 0, "n", "running")))
	if len(inplace) != 0 || len(destructive) != 1 {
		t.Fatalf("command change: inplace %d destructive %d", len(inplace), len(destructive))
	}
}

func TestComputeUnderProvisionedBy(t *testing.T) {
	j := jobV(2, 5, withUpdate(3, 0))
	noStrategy := jobV(2, 5)
	destructive := newAllocSet(alloc(jobV(1, 5), 4, "n", "running"))
	pending := alloc(j, 0, "n", "running")
	pending.DeploymentID = "dep"
	good := healthy(alloc(j, 1, "n", "running"), "dep", true)
	bad := healthy(alloc(j, 2, "n", "running"), "dep", false)
	dep := deployment(j, "running", &structs.DeploymentState{})
	cases := []struct {
		name      string
		job       *structs.Job
		dep       *structs.Deployment
		paused    bool
		untainted allocSet
		destr     allocSet
		canarying bool
		want      int
	}{
		{"no strategy: the count", noStrategy, nil, false, nil, destructive, false, 5},
		{"nothing to replace: the count", j, dep, false, nil, nil, false, 5},
		{"no deployment yet: max_parallel", j, nil, false, nil, destructive, false, 3},
		{"one pending", j, dep, false, newAllocSet(pending, good), destructive, false, 2},
		{"one unhealthy stops it", j, dep, false, newAllocSet(pending, good, bad), destructive, false, 0},
		{"paused", j, dep, true, nil, destructive, false, 0},
		{"canarying", j, dep, false, nil, destructive, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &reconciler{job: c.job, deployment: c.dep, deploymentPaused: c.paused, res: &Result{}}
			if got := r.computeUnderProvisionedBy(c.job.TaskGroups[0], c.untainted, c.destr, nil, c.canarying); got != c.want {
				t.Fatalf("budget %d, want %d", got, c.want)
			}
		})
	}
}

func TestBatchFollowupEvals(t *testing.T) {
	j := jobV(1, 4)
	r := &reconciler{job: j, in: Input{Now: now, EvalID: "e0", EvalPriority: 70, NewID: ids()}, res: &Result{}}
	at := func(idx uint, d time.Duration) delayed {
		return delayed{alloc: alloc(j, idx, "n", "failed"), at: now.Add(d)}
	}
	// 10s, 12s and 14.9s share one eval (within 5s of its first); 16s
	// opens another.
	evalOf := r.batchFollowupEvals([]delayed{at(3, 16*time.Second), at(0, 10*time.Second), at(1, 12*time.Second),
		at(2, 14900*time.Millisecond)}, "trigger", "desc")
	if len(r.res.FollowupEvals) != 2 {
		t.Fatalf("evals %d", len(r.res.FollowupEvals))
	}
	first, second := r.res.FollowupEvals[0], r.res.FollowupEvals[1]
	if !first.WaitUntil.Equal(now.Add(10*time.Second)) || !second.WaitUntil.Equal(now.Add(16*time.Second)) {
		t.Fatalf("wait until %v %v", first.WaitUntil, second.WaitUntil)
	}
	if evalOf["v1-0"] != first.ID || evalOf["v1-1"] != first.ID || evalOf["v1-2"] != first.ID || evalOf["v1-3"] != second.ID {
		t.Fatalf("assignment %v", evalOf)
	}
	if first.Priority != 70 || first.PreviousEval != "e0" || first.TriggeredBy != "trigger" || first.Status != "pending" {
		t.Fatalf("eval %+v", first)
	}
}

func TestCanarySteps(t *testing.T) {
	v1 := jobV(1, 3, withUpdate(1, 2))
	v2 := jobV(2, 3, withUpdate(1, 2), withCommand("/x"))
	destructive := newAllocSet(allocs(v1, 3, "running")...)
	st := &structs.DeploymentState{}
	if !requiresCanaries(v2.TaskGroups[0], st, destructive, nil) {
		t.Fatal("canaries not required")
	}
	if requiresCanaries(v2.TaskGroups[0], &structs.DeploymentState{Promoted: true}, destructive, nil) {
		t.Fatal("promoted still requires canaries")
	}
	if requiresCanaries(v2.TaskGroups[0], st, nil, nil) {
		t.Fatal("canaries without a destructive change")
	}
	r := &reconciler{job: v2, res: &Result{}}
	du := &structs.DesiredUpdates{}
	r.computeCanaries(v2.TaskGroups[0], st, destructive, nil, newNameIndex("web", "g", 3, destructive), du)
	if st.DesiredCanaries != 2 || du.Canary != 2 || len(r.res.Place) != 2 || r.res.Place[0].Name != "web.g[0]" || !r.res.Place[0].Canary {
		t.Fatalf("state %+v desired %+v place %+v", st, du, r.res.Place)
	}
	// Paused: wanted, not placed.
	r = &reconciler{job: v2, res: &Result{}, deploymentPaused: true}
	st = &structs.DeploymentState{}
	r.computeCanaries(v2.TaskGroups[0], st, destructive, nil, newNameIndex("web", "g", 3, destructive), &structs.DesiredUpdates{})
	if st.DesiredCanaries != 2 || len(r.res.Place) != 0 {
		t.Fatalf("paused placed canaries")
	}
}

func TestCancelUnneededDeployments(t *testing.T) {
	v2 := jobV(2, 3)
	cases := []struct {
		name        string
		dep         *structs.Deployment
		stopped     bool
		current     bool
		wantUpdates string
	}{
		{"current version, running", deployment(v2, "running", nil), false, true, ""},
		{"current version, failed stays current", deployment(v2, "failed", nil), false, true, ""},
		{"current version, successful is done", deployment(v2, "successful", nil), false, false, ""},
		{"older version, running: cancelled", deployment(jobV(1, 3), "running", nil), false, false, "cancelled:" + DescDeploymentNewerJob},
		{"older version, failed: left alone", deployment(jobV(1, 3), "failed", nil), false, false, ""},
		{"job stopped: cancelled", deployment(v2, "paused", nil), true, false, "cancelled:" + DescDeploymentStoppedJob},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &reconciler{job: v2, deployment: copyDeployment(c.dep), res: &Result{}}
			r.cancelUnneededDeployments(c.stopped)
			var upd []string
			for _, u := range r.res.DeploymentUpdates {
				upd = append(upd, u.Status+":"+u.StatusDescription)
			}
			if (r.deployment != nil) != c.current || strings.Join(upd, ";") != c.wantUpdates {
				t.Fatalf("current %v updates %v", r.deployment != nil, upd)
			}
		})
	}
}

func TestComputePlacements(t *testing.T) {
	v1 := jobV(1, 4, withUpdate(1, 1))
	v2 := jobV(2, 4, withUpdate(1, 1), withCommand("/x"))
	tg := v2.TaskGroups[0]
	untainted := newAllocSet(alloc(v1, 0, "n", "running"))
	resched := newAllocSet(failedAt(alloc(v1, 1, "n", "running"), now))
	lost := newAllocSet(alloc(v1, 2, "down", "running"), alloc(v1, 3, "down", "running"))
	names := newNameIndex("web", "g", 4, untainted.union(resched, lost))
	p := computePlacements(v2, tg, names, untainted, nil, resched, lost, false)
	if len(p.named) != 3 || !p.named[0].Reschedule || !p.named[1].Lost || p.fresh != nil {
		t.Fatalf("placements %+v fresh %+v", p.named, p.fresh)
	}
	// While canarying, replacements of old allocations keep their version
	// and no fresh names are taken.
	p = computePlacements(v2, tg, names, newAllocSet(), nil, resched, lost, true)
	if len(p.named) != 3 || p.named[0].Job != v1 || p.fresh != nil {
		t.Fatalf("canarying placements %+v", p.named)
	}
	// Lost replacements stop at the count.
	full := newAllocSet(alloc(v2, 0, "n", "running"), alloc(v2, 1, "n", "running"), alloc(v2, 3, "n", "running"))
	p = computePlacements(v2, tg, names, full, nil, nil, lost, false)
	if len(p.named) != 1 || p.fresh != nil {
		t.Fatalf("over count: %+v", p.named)
	}
}

func TestComputeReconnecting(t *testing.T) {
	withReconcile := func(strategy string) *structs.Job {
		return jobV(1, 1, func(j *structs.Job) {
			j.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: ptr(time.Hour), Reconcile: ptr(strategy)}
		})
	}
	orig := func(j *structs.Job) *structs.Allocation {
		a := alloc(j, 0, "n1", "running")
		a.AllocStates = []*structs.AllocState{{Field: "ClientStatus", Value: "unknown", Time: now.Add(-time.Minute)}}
		a.TaskStates = map[string]*structs.TaskState{"t": {State: "running", StartedAt: now.Add(-time.Hour)}}
		a.Metrics = &structs.AllocMetric{ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: "n1", NormScore: 0.5}}}
		return a
	}
	repl := func(j *structs.Job, score float64) *structs.Allocation {
		a := alloc(j, 0, "n2", "running")
		a.ID, a.PreviousAllocation = "repl", "v1-0"
		a.TaskStates = map[string]*structs.TaskState{"t": {State: "running", StartedAt: now.Add(-time.Minute)}}
		a.Metrics = &structs.AllocMetric{ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: "n2", NormScore: score}}}
		return a
	}
	cases := []struct {
		strategy string
		score    float64
		failed   bool
		newer    bool
		keep     string // "orig" or "repl"
	}{
		{strategy: "keep_original", score: 0.9, keep: "orig"},
		{strategy: "keep_replacement", score: 0.1, keep: "repl"},
		{strategy: "longest_running", score: 0.9, keep: "orig"},
		{strategy: "best_score", score: 0.9, keep: "repl"},
		{strategy: "best_score", score: 0.1, keep: "orig"},
		{strategy: "keep_original", newer: true, keep: "repl"},
		{strategy: "keep_original", failed: true, keep: "repl"},
	}
	for _, c := range cases {
		j := withReconcile(c.strategy)
		o := orig(j)
		if c.failed {
			o.ClientStatus = "failed"
		}
		rj := j
		if c.newer {
			rj = jobV(2, 1, func(x *structs.Job) { x.TaskGroups[0].Disconnect = j.TaskGroups[0].Disconnect })
		}
		rp := repl(rj, c.score)
		r := &reconciler{job: rj, res: &Result{}, in: Input{Now: now}}
		untainted := newAllocSet(rp)
		reconnecting := newAllocSet(o)
		r.computeReconnecting(j.TaskGroups[0], &untainted, &reconnecting, newAllocSet(o, rp), &structs.DesiredUpdates{})
		var stopped []string
		for _, s := range r.res.Stop {
			stopped = append(stopped, s.Alloc.ID)
		}
		wantStop, wantKeep := "repl", "v1-0"
		if c.keep == "repl" {
			wantStop, wantKeep = "v1-0", "repl"
		}
		if strings.Join(stopped, ",") != wantStop {
			t.Errorf("%+v: stopped %v, want %s", c, stopped, wantStop)
		}
		if _, ok := untainted[wantKeep]; !ok {
			t.Errorf("%+v: %s not kept: %s", c, wantKeep, namesOf(untainted))
		}
		if (len(r.res.ReconnectUpdates) == 1) != (c.keep == "orig") {
			t.Errorf("%+v: reconnect updates %d", c, len(r.res.ReconnectUpdates))
		}
	}
}
