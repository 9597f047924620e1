package reconcile

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// TestCompute drives the whole reconciler through every bucket and
// decision; the steps have their own tests beside them.
func TestCompute(t *testing.T) {
	v1 := jobV(1, 3)
	v1u := jobV(1, 3, withUpdate(1, 0))
	v2cmd := jobV(2, 3, withUpdate(1, 0), withCommand("/bin/app2"))
	v2cmd2 := jobV(2, 3, withUpdate(2, 0), withCommand("/bin/app2"))
	v2scale5 := jobV(2, 5, withUpdate(1, 0))
	v2canary := jobV(2, 3, withUpdate(1, 1), withCommand("/bin/app2"))
	v2mp := jobV(2, 3, withUpdate(3, 0)) // only max_parallel changed
	v2noUpd := jobV(2, 3, withCommand("/bin/app2"))
	stopped := jobV(2, 3, withUpdate(1, 0))
	stopped.Stop = true
	batch := jobV(1, 2, asBatch)
	batch2 := jobV(2, 2, asBatch, withCommand("/bin/b2"))
	// The same JobModifyIndex as v1, another version: two registrations
	// in one Raft entry.
	sameEntry := jobV(2, 3, withCommand("/bin/app2"))
	sameEntry.JobModifyIndex = v1.JobModifyIndex
	disc := jobV(1, 2, func(j *structs.Job) {
		j.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: ptr(time.Hour)}
	})
	discNoReplace := jobV(1, 2, func(j *structs.Job) {
		j.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: ptr(time.Hour), Replace: ptr(false)}
	})
	legacyNoReplace := jobV(1, 2, func(j *structs.Job) {
		j.TaskGroups[0].MaxClientDisconnect = ptr(time.Hour)
		j.TaskGroups[0].PreventRescheduleOnLost = true
	})
	discKeepRepl := jobV(1, 2, func(j *structs.Job) {
		j.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: ptr(time.Hour), Reconcile: ptr("keep_replacement")}
	})

	stopAfterJob := jobV(1, 3, func(j *structs.Job) {
		j.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{StopOnClientAfter: ptr(time.Minute)}
	})
	lostEarlier := func(j *structs.Job, followup string, at time.Time) *structs.Allocation {
		a := alloc(j, 0, "n9", "lost")
		a.DesiredStatus, a.FollowupEvalID, a.ModifyTime = "stop", followup, at.UnixNano()
		return a
	}
	down := map[string]*structs.Node{"n9": {ID: "n9", Status: structs.NodeStatusDown}}
	gone := map[string]*structs.Node{"n9": nil}
	disconnected := map[string]*structs.Node{"n9": {ID: "n9", Status: structs.NodeStatusDisconnected}}
	draining := map[string]*structs.Node{"n9": {ID: "n9", Status: structs.NodeStatusReady, DrainStrategy: &structs.DrainStrategy{}}}

	on := func(a *structs.Allocation, node string) *structs.Allocation { a.NodeID = node; return a }
	migrating := func(a *structs.Allocation) *structs.Allocation { a.DesiredTransition.Migrate = ptr(true); return a }
	unknownSince := func(a *structs.Allocation, since time.Time) *structs.Allocation {
		a.ClientStatus = "unknown"
		a.AllocStates = []*structs.AllocState{{Field: "ClientStatus", Value: "unknown", Time: since}}
		return a
	}
	followup := func(a *structs.Allocation, id string) *structs.Allocation { a.FollowupEvalID = id; return a }
	next := func(a *structs.Allocation, id string) *structs.Allocation { a.NextAllocation = id; return a }
	desired := func(a *structs.Allocation, s string) *structs.Allocation { a.DesiredStatus = s; return a }
	canary := func(a *structs.Allocation, dep string) *structs.Allocation {
		a.DeploymentID = dep
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
		return a
	}
	three := func(j *structs.Job) []*structs.Allocation { return allocs(j, 3, "running") }
	with := func(l []*structs.Allocation, extra ...*structs.Allocation) []*structs.Allocation {
		return append(l, extra...)
	}

	cases := []struct {
		name    string
		job     *structs.Job
		batch   bool
		dep     *structs.Deployment
		allocs  []*structs.Allocation
		tainted map[string]*structs.Node
		evalID  string
		want    string
	}{
		// Placing and stopping by count.
		{name: "new job without update block: no deployment", job: v1,
			want: "fresh=3(web.g[0],web.g[1],web.g[2])"},
		{name: "new job with update block: deployment of all", job: v1u,
			want: "fresh=3(web.g[0],web.g[1],web.g[2]) deploy=new(total 3)"},
		{name: "fill the gap with the lowest free name", job: v1,
			allocs: []*structs.Allocation{alloc(v1, 0, "n1", "running"), alloc(v1, 2, "n1", "running")},
			want:   "fresh=1(web.g[1])"},
		{name: "steady: nothing", job: v1u, allocs: three(v1u), want: ""},
		{name: "scale down stops the highest names", job: jobV(1, 1), allocs: three(v1),
			want: "stop=web.g[1],web.g[2]"},
		{name: "count 0 stops all", job: jobV(1, 0), allocs: three(v1), want: "stop=web.g[0],web.g[1],web.g[2]"},
		// A failed allocation the policy does not replace counts toward the
		// count: scaling down stops it first, and marks it desired stop.
		{name: "scale down stops a failed allocation first", job: jobV(1, 2, noResched), allocs: with(
			[]*structs.Allocation{failedAt(alloc(v1, 0, "n1", "running"), now.Add(-time.Minute))},
			alloc(v1, 1, "n1", "running"), alloc(v1, 2, "n1", "running")),
			want: "stop=web.g[0]"},
		{name: "scale down marks a failed highest name stop", job: jobV(1, 2, noResched), allocs: with(
			[]*structs.Allocation{alloc(v1, 0, "n1", "running"), alloc(v1, 1, "n1", "running")},
			failedAt(alloc(v1, 2, "n1", "running"), now.Add(-time.Minute))),
			want: "stop=web.g[2]"},
		{name: "batch scale down stops a failed allocation first", job: jobV(1, 1, asBatch, noResched), batch: true, allocs: []*structs.Allocation{
			alloc(batch, 0, "n1", "running"), failedAt(alloc(batch, 1, "n1", "running"), now.Add(-time.Minute))},
			want: "stop=web.g[1]"},
		{name: "batch scale down: failed before running even at a lower name", job: jobV(1, 1, asBatch, noResched), batch: true, allocs: []*structs.Allocation{
			failedAt(alloc(batch, 0, "n1", "running"), now.Add(-time.Minute)), alloc(batch, 1, "n1", "running")},
			want: "stop=web.g[0]"},
		{name: "scale 3 to 5 with a new version: in place plus 2, no stop", job: v2scale5, allocs: three(v1u),
			want: "fresh=2(web.g[3],web.g[4]) inplace=web.g[0],web.g[1],web.g[2] deploy=new(total 5)"},
		{name: "only max_parallel changed: in place", job: v2mp, allocs: three(v1u),
			want: "inplace=web.g[0],web.g[1],web.g[2] deploy=new(total 3)"},

		// Destructive updates and the rolling budget.
		{name: "command change, max_parallel 1: one at a time", job: v2cmd, allocs: three(v1u),
			want: "destructive=web.g[0] deploy=new(total 3)"},
		{name: "command change, max_parallel 2", job: v2cmd2, allocs: three(v1u),
			want: "destructive=web.g[0],web.g[1] deploy=new(total 3)"},
		{name: "no update strategy: all at once", job: v2noUpd, allocs: three(v1),
			want: "destructive=web.g[0],web.g[1],web.g[2]"},
		{name: "same JobModifyIndex, newer version: still replaced", job: sameEntry, allocs: three(v1),
			want: "destructive=web.g[0],web.g[1],web.g[2]"},
		{name: "deployment waits for the unhealthy-yet replacement", job: v2cmd,
			dep:    deployment(v2cmd, "running", &structs.DeploymentState{DesiredTotal: 3}),
			allocs: []*structs.Allocation{healthy(alloc(v2cmd, 0, "n1", "running"), "dep", false), alloc(v1u, 1, "n1", "running"), alloc(v1u, 2, "n1", "running")},
			want:   ""},
		{name: "deployment with the replacement pending health", job: v2cmd,
			dep:    deployment(v2cmd, "running", &structs.DeploymentState{DesiredTotal: 3}),
			allocs: []*structs.Allocation{func() *structs.Allocation { a := alloc(v2cmd, 0, "n1", "running"); a.DeploymentID = "dep"; return a }(), alloc(v1u, 1, "n1", "running"), alloc(v1u, 2, "n1", "running")},
			want:   ""},
		{name: "deployment continues once the replacement is healthy", job: v2cmd,
			dep:    deployment(v2cmd, "running", &structs.DeploymentState{DesiredTotal: 3, HealthyAllocs: 1}),
			allocs: []*structs.Allocation{healthy(alloc(v2cmd, 0, "n1", "running"), "dep", true), alloc(v1u, 1, "n1", "running"), alloc(v1u, 2, "n1", "running")},
			want:   "destructive=web.g[1]"},
		{name: "paused deployment replaces nothing", job: v2cmd,
			dep:    deployment(v2cmd, "paused", &structs.DeploymentState{DesiredTotal: 3, HealthyAllocs: 1}),
			allocs: []*structs.Allocation{healthy(alloc(v2cmd, 0, "n1", "running"), "dep", true), alloc(v1u, 1, "n1", "running"), alloc(v1u, 2, "n1", "running")},
			want:   ""},
		{name: "failed deployment replaces nothing", job: v2cmd,
			dep:    deployment(v2cmd, "failed", &structs.DeploymentState{DesiredTotal: 3, HealthyAllocs: 1}),
			allocs: []*structs.Allocation{healthy(alloc(v2cmd, 0, "n1", "running"), "dep", true), alloc(v1u, 1, "n1", "running"), alloc(v1u, 2, "n1", "running")},
			want:   ""},
		{name: "complete deployment is marked successful", job: v2cmd,
			dep:    deployment(v2cmd, "running", &structs.DeploymentState{DesiredTotal: 3, HealthyAllocs: 3}),
			allocs: []*structs.Allocation{healthy(alloc(v2cmd, 0, "n1", "running"), "dep", true), healthy(alloc(v2cmd, 1, "n1", "running"), "dep", true), healthy(alloc(v2cmd, 2, "n1", "running"), "dep", true)},
			want:   "updates=dep:successful"},
		{name: "not yet healthy enough: not successful", job: v2cmd,
			dep:    deployment(v2cmd, "running", &structs.DeploymentState{DesiredTotal: 3, HealthyAllocs: 2}),
			allocs: []*structs.Allocation{healthy(alloc(v2cmd, 0, "n1", "running"), "dep", true), healthy(alloc(v2cmd, 1, "n1", "running"), "dep", true), alloc(v2cmd, 2, "n1", "running")},
			want:   ""},
		{name: "an older version's active deployment is cancelled", job: v2cmd,
			dep:    deployment(v1u, "running", &structs.DeploymentState{DesiredTotal: 3}),
			allocs: three(v1u),
			want:   "destructive=web.g[0] deploy=new(total 3) updates=dep:cancelled"},
		{name: "stopped job stops all and cancels its deployment", job: stopped,
			dep:    deployment(stopped, "running", &structs.DeploymentState{DesiredTotal: 3}),
			allocs: with(three(v1u), desired(alloc(v1u, 5, "n1", "complete"), "stop")),
			want:   "stop=web.g[0],web.g[1],web.g[2] updates=dep:cancelled"},
		{name: "purged job stops all, lost node marks lost", job: nil,
			allocs: []*structs.Allocation{on(alloc(v1, 0, "n1", "running"), "n9")}, tainted: gone,
			want: "stop=web.g[0]:lost"},

		// Canaries.
		{name: "canary 1: one canary named after a replaced alloc, the rest held", job: v2canary, allocs: three(v1u),
			want: "canary=web.g[0] deploy=new(total 3 canaries 1)"},
		{name: "canary placed, unpromoted: nothing more", job: v2canary,
			dep:    deployment(v2canary, "running", &structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 1, PlacedCanaries: []string{"v2-0"}}),
			allocs: with(three(v1u), canary(alloc(v2canary, 0, "n1", "running"), "dep")),
			want:   ""},
		{name: "canary promoted: its old namesake stops, the rest roll", job: v2canary,
			dep: deployment(v2canary, "running", &structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 1, Promoted: true,
				PlacedCanaries: []string{"v2-0"}, HealthyAllocs: 1}),
			allocs: with(three(v1u), healthy(canary(alloc(v2canary, 0, "n1", "running"), "dep"), "dep", true)),
			want:   "stop=web.g[0] destructive=web.g[1]"},
		{name: "failed deployment's unpromoted canary is stopped", job: v2canary,
			dep:    deployment(v2canary, "failed", &structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 1, PlacedCanaries: []string{"v2-0"}}),
			allocs: with(three(v1u), canary(alloc(v2canary, 0, "n1", "running"), "dep")),
			want:   "stop=web.g[0]"},
		{name: "older deployment's canary is stopped", job: jobV(3, 3, withUpdate(1, 1), withCommand("/bin/app3")),
			dep:    deployment(v2canary, "running", &structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 1, PlacedCanaries: []string{"v2-0"}}),
			allocs: with(three(v1u), canary(alloc(v2canary, 0, "n1", "running"), "dep")),
			want:   "canary=web.g[0] stop=web.g[0] deploy=new(total 3 canaries 1) updates=dep:cancelled"},
		{name: "lost old alloc while canarying keeps its version", job: v2canary,
			dep: deployment(v2canary, "running", &structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 1, PlacedCanaries: []string{"v2-0"}}),
			allocs: with([]*structs.Allocation{alloc(v1u, 0, "n1", "running"), alloc(v1u, 1, "n1", "running"), on(alloc(v1u, 2, "n1", "running"), "n9")},
				canary(alloc(v2canary, 0, "n1", "running"), "dep")),
			tainted: down,
			want:    "place=web.g[2]:lost:v1 stop=web.g[2]:lost"},

		// Tainted nodes.
		{name: "lost node: stop as lost and replace", job: v1,
			allocs:  []*structs.Allocation{on(alloc(v1, 0, "n1", "running"), "n9"), alloc(v1, 1, "n1", "running"), alloc(v1, 2, "n1", "running")},
			tainted: down, want: "place=web.g[0]:lost stop=web.g[0]:lost"},
		{name: "draining without migrate flag stays", job: v1,
			allocs:  []*structs.Allocation{on(alloc(v1, 0, "n1", "running"), "n9"), alloc(v1, 1, "n1", "running"), alloc(v1, 2, "n1", "running")},
			tainted: draining, want: ""},
		{name: "migrate flag: stop and replace", job: v1,
			allocs:  []*structs.Allocation{alloc(v1, 0, "n1", "running"), migrating(on(alloc(v1, 1, "n1", "running"), "n9")), alloc(v1, 2, "n1", "running")},
			tainted: draining, want: "place=web.g[1] stop=web.g[1]"},
		{name: "disconnected node without disconnect block: lost", job: v1,
			allocs:  []*structs.Allocation{on(alloc(v1, 0, "n1", "running"), "n9"), alloc(v1, 1, "n1", "running"), alloc(v1, 2, "n1", "running")},
			tainted: disconnected, want: "place=web.g[0]:lost stop=web.g[0]:lost"},
		{name: "disconnecting: marked unknown, timeout eval, replaced", job: disc,
			allocs:  []*structs.Allocation{on(alloc(disc, 0, "n1", "running"), "n9"), alloc(disc, 1, "n1", "running")},
			tainted: disconnected, want: "place=web.g[0] disconnect=web.g[0] evals=1"},
		{name: "disconnecting without replace: marked unknown only", job: discNoReplace,
			allocs:  []*structs.Allocation{on(alloc(discNoReplace, 0, "n1", "running"), "n9"), alloc(discNoReplace, 1, "n1", "running")},
			tainted: disconnected, want: "disconnect=web.g[0] evals=1"},
		{name: "legacy max_client_disconnect and prevent_reschedule_on_lost: marked unknown only", job: legacyNoReplace,
			allocs:  []*structs.Allocation{on(alloc(legacyNoReplace, 0, "n1", "running"), "n9"), alloc(legacyNoReplace, 1, "n1", "running")},
			tainted: disconnected, want: "disconnect=web.g[0] evals=1"},
		{name: "unknown within the window: kept, not replaced twice", job: disc,
			allocs: []*structs.Allocation{unknownSince(on(alloc(disc, 0, "n1", "unknown"), "n9"), now.Add(-time.Minute)),
				func() *structs.Allocation {
					a := alloc(disc, 0, "n2", "running")
					a.ID = "repl"
					a.PreviousAllocation = "v1-0"
					return a
				}(),
				alloc(disc, 1, "n1", "running")},
			tainted: disconnected, want: ""},
		{name: "reconnecting: original resumes, its replacement stops", job: disc,
			allocs: []*structs.Allocation{func() *structs.Allocation {
				// The client is back and reported the alloc running.
				a := unknownSince(alloc(disc, 0, "n1", "running"), now.Add(-time.Minute))
				a.ClientStatus = "running"
				return a
			}(),
				func() *structs.Allocation {
					a := alloc(disc, 0, "n2", "running")
					a.ID = "repl"
					a.PreviousAllocation = "v1-0"
					return a
				}(),
				alloc(disc, 1, "n1", "running")},
			want: "stop=web.g[0] reconnect=web.g[0]"},
		// Found by the reconnect model test (internal/server, R4).
		{name: "unknown past the window with a live replacement: lost, not replaced twice", job: disc,
			allocs: []*structs.Allocation{unknownSince(on(alloc(disc, 0, "n1", "unknown"), "n9"), now.Add(-2*time.Hour)),
				func() *structs.Allocation {
					a := alloc(disc, 0, "n2", "running")
					a.ID = "repl"
					a.PreviousAllocation = "v1-0"
					return a
				}(),
				on(alloc(disc, 1, "n1", "pending"), "n9")},
			tainted: disconnected, want: "place=web.g[1]:lost stop=web.g[0]:lost,web.g[1]:lost"},
		{name: "reconnecting: a replacement that has not started does not win (keep_replacement)", job: discKeepRepl,
			allocs: []*structs.Allocation{func() *structs.Allocation {
				a := unknownSince(alloc(discKeepRepl, 0, "n1", "running"), now.Add(-time.Minute))
				a.ClientStatus = "running"
				return a
			}(),
				func() *structs.Allocation {
					a := alloc(discKeepRepl, 0, "n2", "pending")
					a.ID = "repl"
					a.PreviousAllocation = "v1-0"
					return a
				}(),
				alloc(discKeepRepl, 1, "n1", "running")},
			want: "stop=web.g[0] reconnect=web.g[0]"},
		{name: "reconnecting: a replacement that failed meanwhile is stopped, not rescheduled beside the original", job: disc,
			allocs: []*structs.Allocation{func() *structs.Allocation {
				a := unknownSince(alloc(disc, 0, "n1", "running"), now.Add(-time.Minute))
				a.ClientStatus = "running"
				return a
			}(),
				func() *structs.Allocation {
					a := failedAt(alloc(disc, 0, "n2", "running"), now.Add(-time.Minute))
					a.ID = "repl"
					a.PreviousAllocation = "v1-0"
					return a
				}(),
				alloc(disc, 1, "n1", "running")},
			want: "stop=web.g[0] reconnect=web.g[0]"},
		{name: "unknown past the window: lost", job: disc,
			allocs:  []*structs.Allocation{unknownSince(on(alloc(disc, 0, "n1", "unknown"), "n9"), now.Add(-2*time.Hour)), alloc(disc, 1, "n1", "running")},
			tainted: disconnected, want: "place=web.g[0]:lost stop=web.g[0]:lost"},

		{name: "lost, client stops it itself later: the replacement waits", job: stopAfterJob,
			allocs:  []*structs.Allocation{on(alloc(stopAfterJob, 0, "n1", "running"), "n9"), alloc(stopAfterJob, 1, "n1", "running"), alloc(stopAfterJob, 2, "n1", "running")},
			tainted: down, want: "stop=web.g[0]:lost evals=1"},
		{name: "lost long enough ago: replaced now", job: stopAfterJob,
			allocs: []*structs.Allocation{func() *structs.Allocation {
				a := on(alloc(stopAfterJob, 0, "n1", "running"), "n9")
				a.AllocStates = []*structs.AllocState{{Field: "ClientStatus", Value: "lost", Time: now.Add(-10 * time.Minute)}}
				return a
			}(), alloc(stopAfterJob, 1, "n1", "running"), alloc(stopAfterJob, 2, "n1", "running")},
			tainted: down, want: "place=web.g[0]:lost stop=web.g[0]:lost"},

		{name: "stopped as lost, client may still run it: nothing placed before its follow-up", job: stopAfterJob,
			allocs: []*structs.Allocation{lostEarlier(stopAfterJob, "fe", now.Add(-30*time.Second)), alloc(stopAfterJob, 1, "n1", "running"), alloc(stopAfterJob, 2, "n1", "running")},
			want:   ""},
		{name: "stopped as lost: its follow-up replaces it", job: stopAfterJob, evalID: "fe",
			allocs: []*structs.Allocation{lostEarlier(stopAfterJob, "fe", now.Add(-30*time.Second)), alloc(stopAfterJob, 1, "n1", "running"), alloc(stopAfterJob, 2, "n1", "running")},
			want:   "fresh=1(web.g[0])"},
		{name: "migrate without placement (drain of a batch alloc stopped by hand)", job: v1,
			allocs: []*structs.Allocation{alloc(v1, 0, "n1", "running"), func() *structs.Allocation {
				a := migrating(on(alloc(v1, 1, "n1", "running"), "n9"))
				a.DesiredTransition.MigrateDisablePlacement = ptr(true)
				return a
			}(), alloc(v1, 2, "n1", "running")},
			tainted: draining, want: "stop=web.g[1]"},

		// Reschedule.
		{name: "failed, delay passed: reschedule now", job: v1,
			allocs: []*structs.Allocation{failedAt(alloc(v1, 0, "n1", "running"), now.Add(-time.Minute)), alloc(v1, 1, "n1", "running"), alloc(v1, 2, "n1", "running")},
			want:   "place=web.g[0]:resched"},
		{name: "failed just now: reschedule later with a follow-up", job: v1,
			allocs: []*structs.Allocation{failedAt(alloc(v1, 0, "n1", "running"), now), alloc(v1, 1, "n1", "running"), alloc(v1, 2, "n1", "running")},
			want:   "later=web.g[0] evals=1"},
		{name: "two failures 2s apart share one follow-up", job: v1,
			allocs: []*structs.Allocation{failedAt(alloc(v1, 0, "n1", "running"), now), failedAt(alloc(v1, 1, "n1", "running"), now.Add(2*time.Second)), alloc(v1, 2, "n1", "running")},
			want:   "later=web.g[0],web.g[1] evals=1"},
		{name: "two failures 10s apart get two follow-ups", job: v1,
			allocs: []*structs.Allocation{failedAt(alloc(v1, 0, "n1", "running"), now), failedAt(alloc(v1, 1, "n1", "running"), now.Add(10*time.Second)), alloc(v1, 2, "n1", "running")},
			want:   "later=web.g[0],web.g[1] evals=2"},
		{name: "follow-up already created: nothing", job: v1,
			allocs: []*structs.Allocation{followup(failedAt(alloc(v1, 0, "n1", "running"), now), "fe"), alloc(v1, 1, "n1", "running"), alloc(v1, 2, "n1", "running")},
			want:   ""},
		{name: "the follow-up eval itself reschedules now", job: v1, evalID: "fe",
			allocs: []*structs.Allocation{followup(failedAt(alloc(v1, 0, "n1", "running"), now), "fe"), alloc(v1, 1, "n1", "running"), alloc(v1, 2, "n1", "running")},
			want:   "place=web.g[0]:resched"},
		{name: "already replaced: ignored", job: v1,
			allocs: []*structs.Allocation{next(failedAt(alloc(v1, 5, "n1", "running"), now.Add(-time.Hour)), "x"), alloc(v1, 0, "n1", "running"), alloc(v1, 1, "n1", "running"), alloc(v1, 2, "n1", "running")},
			want:   ""},
		{name: "service complete is replaced", job: v1,
			allocs: []*structs.Allocation{alloc(v1, 0, "n1", "complete"), alloc(v1, 1, "n1", "running"), alloc(v1, 2, "n1", "running")},
			want:   "fresh=1(web.g[0])"},
		{name: "server-stopped alloc ignored", job: jobV(1, 1),
			allocs: []*structs.Allocation{desired(alloc(v1, 0, "n1", "running"), "stop")}, want: "fresh=1(web.g[0])"},
		{name: "active deployment's failed alloc waits for the watcher", job: v2cmd,
			dep: deployment(v2cmd, "running", &structs.DeploymentState{DesiredTotal: 3}),
			allocs: []*structs.Allocation{func() *structs.Allocation {
				a := failedAt(alloc(v2cmd, 0, "n1", "running"), now.Add(-time.Hour))
				a.DeploymentID = "dep"
				return a
			}(), alloc(v1u, 1, "n1", "running"), alloc(v1u, 2, "n1", "running")},
			want: ""},
		{name: "active deployment's failed alloc allowed to reschedule", job: v2cmd,
			dep: deployment(v2cmd, "running", &structs.DeploymentState{DesiredTotal: 3}),
			allocs: []*structs.Allocation{func() *structs.Allocation {
				a := failedAt(alloc(v2cmd, 0, "n1", "running"), now.Add(-time.Hour))
				a.DeploymentID = "dep"
				a.DesiredTransition.Reschedule = ptr(true)
				return a
			}(), alloc(v1u, 1, "n1", "running"), alloc(v1u, 2, "n1", "running")},
			want: "place=web.g[0]:resched"},

		// Batch.
		{name: "batch complete never re-run", job: batch, batch: true,
			allocs: []*structs.Allocation{alloc(batch, 0, "n1", "complete"), alloc(batch, 1, "n1", "running")}, want: ""},
		{name: "batch complete and server-stopped still counts", job: batch, batch: true,
			allocs: []*structs.Allocation{desired(alloc(batch, 0, "n1", "complete"), "stop"), alloc(batch, 1, "n1", "complete")}, want: ""},
		{name: "batch failed reschedules by its policy", job: batch, batch: true,
			allocs: []*structs.Allocation{failedAt(alloc(batch, 0, "n1", "running"), now.Add(-time.Minute)), alloc(batch, 1, "n1", "complete")},
			want:   "place=web.g[0]:resched"},
		{name: "batch out of attempts keeps its slot", job: batch, batch: true,
			allocs: []*structs.Allocation{func() *structs.Allocation {
				a := failedAt(alloc(batch, 0, "n1", "running"), now.Add(-time.Minute))
				a.RescheduleTracker = &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{{RescheduleTime: now.Add(-time.Hour).UnixNano()}}}
				return a
			}(), alloc(batch, 1, "n1", "complete")},
			want: ""},
		{name: "batch new version: old complete allocs run again", job: batch2, batch: true,
			allocs: []*structs.Allocation{alloc(batch, 0, "n1", "complete"), alloc(batch, 1, "n1", "complete")},
			want:   "fresh=2(web.g[0],web.g[1])"},
		{name: "batch never deploys", job: jobV(2, 2, asBatch, withUpdate(1, 0), withCommand("/bin/b2")), batch: true,
			allocs: allocs(batch, 2, "running"), want: "destructive=web.g[0],web.g[1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Compute(Input{Job: c.job, Batch: c.batch, Deployment: c.dep, Allocs: c.allocs,
				TaintedNodes: c.tainted, Now: now, EvalID: c.evalID, EvalPriority: 50, NewID: ids()})
			if got := summary(res); got != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// Placements and in-place updates join the deployment they belong to.
func TestComputeDeploymentID(t *testing.T) {
	v1 := jobV(1, 2, withUpdate(1, 0))
	v2 := jobV(2, 3, withUpdate(1, 0))
	res := Compute(Input{Job: v2, Allocs: allocs(v1, 2, "running"), Now: now, NewID: ids(), EvalPriority: 70})
	d := res.Deployment
	if d == nil || res.DeploymentID != d.ID || d.JobVersion != 2 || d.JobCreateIndex != 5 || d.Status != "running" ||
		d.EvalPriority != 70 || d.StatusDescription != DescDeploymentRunning {
		t.Fatalf("deployment %+v, result ID %q", d, res.DeploymentID)
	}
	if st := d.TaskGroups["g"]; st.DesiredTotal != 3 || st.ProgressDeadline != 10*time.Minute {
		t.Fatalf("group state %+v", st)
	}
	// An active deployment of this version is joined, not recreated.
	res = Compute(Input{Job: v2, Deployment: deployment(v2, "running", &structs.DeploymentState{DesiredTotal: 3}),
		Allocs: allocs(v2, 2, "running"), Now: now, NewID: ids()})
	if res.Deployment != nil || res.DeploymentID != "dep" {
		t.Fatalf("deployment %+v id %q", res.Deployment, res.DeploymentID)
	}
	// A successful one is not.
	res = Compute(Input{Job: v2, Deployment: deployment(v2, "successful", &structs.DeploymentState{DesiredTotal: 3}),
		Allocs: allocs(v2, 2, "running"), Now: now, NewID: ids()})
	if res.DeploymentID != "" {
		t.Fatalf("joined a finished deployment: %q", res.DeploymentID)
	}
}

func TestComputeCanaryDescription(t *testing.T) {
	v1 := jobV(1, 3, withUpdate(1, 1))
	v2 := jobV(2, 3, withUpdate(1, 1), withCommand("/x"))
	res := Compute(Input{Job: v2, Allocs: allocs(v1, 3, "running"), Now: now, NewID: ids()})
	if res.Deployment == nil || res.Deployment.StatusDescription != DescDeploymentNeedsPromotion {
		t.Fatalf("deployment %+v", res.Deployment)
	}
	v2.TaskGroups[0].Update.AutoPromote = ptr(true)
	res = Compute(Input{Job: v2, Allocs: allocs(v1, 3, "running"), Now: now, NewID: ids()})
	if res.Deployment.StatusDescription != DescDeploymentAutoPromotion {
		t.Fatalf("description %q", res.Deployment.StatusDescription)
	}
}

func TestComputeDesiredTGUpdates(t *testing.T) {
	v1 := jobV(1, 2)
	v2 := jobV(2, 3, withCommand("/x"))
	res := Compute(Input{Job: v2, Allocs: allocs(v1, 2, "running"), Now: now})
	du := res.DesiredTGUpdates["g"]
	if du == nil || du.Place != 1 || du.DestructiveUpdate != 2 || du.Stop != 0 {
		t.Fatalf("DesiredTGUpdates = %+v", du)
	}
	if res.Destructive[0].Name != "web.g[0]" {
		t.Fatalf("destructive keeps the name: %q", res.Destructive[0].Name)
	}
}

// The follow-up evals of delayed reschedules wait until the reschedule
// time, and the allocations name them.
func TestComputeFollowupEvals(t *testing.T) {
	v1 := jobV(1, 2)
	res := Compute(Input{Job: v1, Allocs: []*structs.Allocation{failedAt(alloc(v1, 0, "n1", "running"), now), alloc(v1, 1, "n1", "running")},
		Now: now, EvalID: "e0", EvalPriority: 60, NewID: ids()})
	if len(res.FollowupEvals) != 1 || len(res.AttributeUpdates) != 1 {
		t.Fatalf("evals %d updates %d", len(res.FollowupEvals), len(res.AttributeUpdates))
	}
	e := res.FollowupEvals[0]
	if !e.WaitUntil.Equal(now.Add(30*time.Second)) || e.TriggeredBy != structs.EvalTriggerAllocReschedule ||
		e.Status != "pending" || e.Priority != 60 || e.PreviousEval != "e0" || e.JobID != "web" || e.Type != "service" {
		t.Fatalf("eval %+v", e)
	}
	if u := res.AttributeUpdates[0]; u.FollowupEvalID != e.ID || u.ID != "v1-0" || u.Job != v1 {
		t.Fatalf("update %+v", u)
	}
	if res.DesiredTGUpdates["g"].RescheduleLater != 1 {
		t.Fatalf("desired %+v", res.DesiredTGUpdates["g"])
	}
}

// A group of a billion asks for one Fresh entry: nothing is built per
// allocation until the scheduler names it, and names come lowest free
// index first, skipping the indexes kept allocations hold.
func TestComputeHugeCountIsLazy(t *testing.T) {
	job := jobV(1, 1_000_000_000)
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

// A lost allocation its client stops by itself (stop_on_client_after) is
// stopped as lost now, naming the follow-up evaluation that replaces it
// once the client has stopped it (stop_on_client_after + kill timeout).
func TestComputeStopAfterClientDisconnect(t *testing.T) {
	j := jobV(1, 1, func(j *structs.Job) {
		j.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{StopOnClientAfter: ptr(time.Minute)}
		j.TaskGroups[0].Tasks[0].KillTimeout = 20 * time.Second
	})
	res := Compute(Input{Job: j, Allocs: []*structs.Allocation{alloc(j, 0, "n9", "running")},
		TaintedNodes: map[string]*structs.Node{"n9": nil}, Now: now, NewID: ids()})
	if len(res.FollowupEvals) != 1 || len(res.Stop) != 1 || len(res.Fresh)+len(res.Place) != 0 {
		t.Fatalf("result %s", summary(res))
	}
	e := res.FollowupEvals[0]
	if !e.WaitUntil.Equal(now.Add(80*time.Second)) || e.TriggeredBy != structs.EvalTriggerRetryFailedAlloc ||
		res.Stop[0].FollowupEvalID != e.ID || res.Stop[0].ClientStatus != "lost" {
		t.Fatalf("eval %+v stop %+v", e, res.Stop[0])
	}
}
