package reconcile

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// scenario is one random (job diff, alloc set, tainted nodes, deployment).
type scenario struct {
	desc    string
	old     *structs.Job
	job     *structs.Job
	dep     *structs.Deployment
	allocs  []*structs.Allocation
	tainted map[string]*structs.Node
	// countOnly: the new version changes nothing but a larger or equal count.
	countOnly bool
}

func randomScenario(r *rand.Rand) scenario {
	mp := 1 + r.IntN(3)
	canary := 0
	if r.IntN(4) == 0 {
		canary = 1
	}
	count := 1 + r.IntN(8)
	old := jobV(1, count, withUpdate(mp, canary))
	sc := scenario{old: old}
	newCount := count
	kind := r.IntN(5)
	var muts []func(*structs.Job)
	muts = append(muts, withUpdate(mp, canary))
	switch kind {
	case 0: // no change
		sc.job, sc.desc = old, "same version"
	case 1: // count only
		newCount = count + r.IntN(4)
		sc.countOnly, sc.desc = true, "count only"
	case 2: // destructive
		muts, sc.desc = append(muts, withCommand("/bin/v2")), "destructive"
	case 3: // in place (update block)
		muts, sc.desc = append(muts, func(j *structs.Job) { *j.TaskGroups[0].Update.HealthyDeadline = time.Hour }), "in place"
	case 4: // destructive and scaled
		newCount = 1 + r.IntN(10)
		muts, sc.desc = append(muts, withCommand("/bin/v2")), "destructive and scaled"
	}
	if sc.job == nil {
		sc.job = jobV(2, newCount, muts...)
	}

	nodes := []string{"n1", "n2", "n3", "n4"}
	sc.tainted = map[string]*structs.Node{}
	if !sc.countOnly {
		for _, n := range nodes[2:] {
			switch r.IntN(6) {
			case 0:
				sc.tainted[n] = &structs.Node{ID: n, Status: structs.NodeStatusDown}
			case 1:
				sc.tainted[n] = nil
			case 2:
				sc.tainted[n] = &structs.Node{ID: n, Status: structs.NodeStatusReady, DrainStrategy: &structs.DrainStrategy{}}
			}
		}
	}

	// A deployment of the new version may be under way.
	var dep *structs.Deployment
	if sc.job.Version == 2 && r.IntN(2) == 0 {
		st := &structs.DeploymentState{DesiredTotal: newCount}
		if canary > 0 {
			st.DesiredCanaries = canary
			st.Promoted = r.IntN(2) == 0
		}
		dep = deployment(sc.job, []string{"running", "running", "paused", "failed"}[r.IntN(4)], st)
	}
	sc.dep = dep

	// The old version's group as it ran: at most count allocations, one
	// per name.
	n := r.IntN(count + 1)
	for i := 0; i < n; i++ {
		v := old
		if sc.job.Version == 2 && r.IntN(3) == 0 && !sc.countOnly {
			v = sc.job
		}
		a := alloc(v, uint(i), nodes[r.IntN(len(nodes))], "running")
		a.ID = fmt.Sprintf("a%d", i)
		switch r.IntN(8) {
		case 0:
			a.ClientStatus = "pending"
		case 1:
			if !sc.countOnly {
				failedAt(a, now.Add(-time.Duration(r.IntN(120))*time.Second))
			}
		case 2:
			a.ClientStatus = "complete"
		}
		if v == sc.job && dep != nil {
			a.DeploymentID = dep.ID
			switch r.IntN(3) {
			case 0:
				a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: ptr(true)}
				dep.TaskGroups["g"].HealthyAllocs++
			case 1:
				a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: ptr(false)}
			}
			if canary > 0 && len(dep.TaskGroups["g"].PlacedCanaries) < canary {
				if a.DeploymentStatus == nil {
					a.DeploymentStatus = &structs.AllocDeploymentStatus{}
				}
				a.DeploymentStatus.Canary = true
				dep.TaskGroups["g"].PlacedCanaries = append(dep.TaskGroups["g"].PlacedCanaries, a.ID)
			}
		} else {
			// Allocations of the old version finished their deployment.
			a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: ptr(true)}
		}
		sc.allocs = append(sc.allocs, a)
	}
	return sc
}

// serving reports whether a is a healthy allocation serving the job: running
// where its node is fine, and not reported unhealthy.
func serving(a *structs.Allocation, tainted map[string]*structs.Node) bool {
	if a.DesiredStatus != "run" || a.ClientStatus != "running" || isUnhealthy(a) {
		return false
	}
	n, ok := tainted[a.NodeID]
	return !ok || n != nil && n.Status == structs.NodeStatusReady
}

// Over random job diffs, allocation sets and tainted nodes: never more than
// max_parallel destructive changes in flight per group, never fewer than
// count - max_parallel healthy allocations during an update, and a change of
// count alone never stops a healthy allocation.
func TestComputeProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 26))
	for i := 0; i < 5000; i++ {
		sc := randomScenario(r)
		res := Compute(Input{Job: sc.job, Deployment: sc.dep, Allocs: sc.allocs, TaintedNodes: sc.tainted,
			Now: now, EvalID: "e", NewID: ids()})
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("scenario %d (%s, max_parallel %d, count %d->%d, deployment %v):\n%s\nresult: %s", i, sc.desc,
				maxParallel(sc.job.TaskGroups[0].Update), sc.old.TaskGroups[0].Count, sc.job.TaskGroups[0].Count,
				sc.dep != nil, fmt.Sprintf(format, args...), summary(res))
		}
		m := maxParallel(sc.job.TaskGroups[0].Update)
		count := sc.job.TaskGroups[0].Count

		stopped := map[string]bool{}
		for _, s := range res.Stop {
			stopped[s.Alloc.ID] = true
		}
		for _, d := range res.Destructive {
			stopped[d.Old.ID] = true
		}

		// In flight: the current deployment's allocations not yet healthy,
		// plus what this pass starts replacing.
		if len(res.Destructive) > 0 {
			pending := 0
			for _, a := range sc.allocs {
				if res.DeploymentID != "" && a.DeploymentID == res.DeploymentID && !stopped[a.ID] &&
					!a.TerminalStatus() && !isHealthy(a) && !isCanary(a) {
					pending++
				}
			}
			if pending+len(res.Destructive) > m {
				fail("%d destructive with %d pending over max_parallel %d", len(res.Destructive), pending, m)
			}
		}

		healthyBefore, healthyAfter := 0, 0
		for _, a := range sc.allocs {
			if serving(a, sc.tainted) {
				healthyBefore++
				if !stopped[a.ID] {
					healthyAfter++
				}
			}
		}
		live := 0
		for _, a := range sc.allocs {
			if !a.TerminalStatus() {
				live++
			}
		}
		// Unless the count went below what runs (a scale-down stops the
		// highest names, healthy or not).
		if live <= count && healthyAfter < min(healthyBefore, count)-m {
			fail("healthy %d -> %d, below count %d - max_parallel %d", healthyBefore, healthyAfter, count, m)
		}

		// A count that is not below what runs leaves every healthy
		// allocation alone (above it, the excess is a scale-down).
		if sc.countOnly && live <= count {
			for _, a := range sc.allocs {
				if serving(a, sc.tainted) && stopped[a.ID] {
					fail("count-only change stopped healthy %s", a.Name)
				}
			}
		}
	}
}
