package reconcile

import (
	"sort"
	"strconv"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Descriptions written on allocations the reconciler stops.
const (
	DescNotNeeded   = "alloc not needed due to job update"
	DescJobStopped  = "alloc not needed as job is stopped"
	DescLost        = "alloc is lost since its node is down"
	DescMigrating   = "alloc is being migrated"
	DescUpdating    = "alloc is being updated due to job update"
	DescRescheduled = "alloc was rescheduled because it failed"
	DescReconnected = "alloc not needed due to disconnected client reconnect"
)

// UpdateFn decides how an allocation of an older job version moves to job,
// once TasksUpdated found no destructive difference: it returns the updated
// allocation (same ID, new Job, resources kept) when it still fits on its
// node, or destructive=true when it must be replaced. The scheduler's
// version tries the feasibility and rank chain on the allocation's one node;
// it must not change the plan it is given.
type UpdateFn func(existing *structs.Allocation, job *structs.Job, tg *structs.TaskGroup) (destructive bool, updated *structs.Allocation)

// Input is everything the reconciler looks at.
type Input struct {
	// Job is the current job; nil when it was purged.
	Job *structs.Job
	// Batch selects batch semantics (completed allocs count and never re-run).
	Batch bool
	// Deployment is the job's latest deployment (any status), or nil.
	Deployment *structs.Deployment
	// Allocs are all allocations of the job, of any version.
	Allocs []*structs.Allocation
	// TaintedNodes are nodes that are down, disconnected, draining or gone
	// (nil value) and hold allocations of the job.
	TaintedNodes map[string]*structs.Node
	Now          time.Time

	// EvalID and EvalPriority are the evaluation's: follow-up evaluations
	// and deployments take its priority, and an allocation whose follow-up
	// is this evaluation reschedules now.
	EvalID       string
	EvalPriority int

	// Update tries in-place updates; nil takes every non-destructive
	// change in place without a fit check.
	Update UpdateFn
	// NewID makes IDs for the deployment and follow-up evaluations it
	// creates (the reconciler draws no randomness itself).
	NewID func() string
}

// Placement asks the scheduler to place one allocation.
type Placement struct {
	Name      string
	TaskGroup *structs.TaskGroup
	// PreviousAlloc is the allocation this one replaces (lost, migrated,
	// rescheduled, disconnected), if any.
	PreviousAlloc *structs.Allocation
	// Reschedule is set when PreviousAlloc failed: the scheduler stops it in
	// the same plan, extends its reschedule tracker and avoids its node.
	Reschedule bool
	// Lost is set when PreviousAlloc was on a lost node (already stopped).
	Lost bool
	// Canary places a canary of the deployment.
	Canary bool
	// Job, when set, is the older job version to place (a replacement of a
	// non-canary while canaries are unpromoted keeps its version); nil
	// places the current job.
	Job *structs.Job
}

// Stop asks the scheduler to stop one allocation.
type Stop struct {
	Alloc        *structs.Allocation
	ClientStatus string // "" keeps the client's status; "lost" for lost allocs
	Description  string
	// FollowupEvalID is the evaluation that will act when the client has
	// stopped it (lost allocs of groups with stop_on_client_after).
	FollowupEvalID string
}

// Destructive replaces an allocation running an older job spec: the old
// one is stopped and a new one with the same name placed in one plan.
type Destructive struct {
	Name      string
	TaskGroup *structs.TaskGroup
	Old       *structs.Allocation
}

// Result is what must change.
type Result struct {
	// Deployment is a deployment to create (or, initializing, to persist).
	Deployment *structs.Deployment
	// DeploymentUpdates change existing deployments' status (cancelled,
	// successful).
	DeploymentUpdates []*structs.DeploymentStatusUpdate
	// DeploymentID is the deployment placements and in-place updates join:
	// the one created or the job version's active one; "" when none.
	DeploymentID string

	// Place are named placements: replacements of existing allocations
	// (lost, migrated, rescheduled, disconnected) and canaries.
	Place []Placement
	// Fresh are new allocations per group, to be named as they are placed.
	Fresh       []Fresh
	Stop        []Stop
	Destructive []Destructive
	// InPlace are allocations updated where they run: same ID, new Job.
	InPlace []*structs.Allocation
	// AttributeUpdates change fields of allocations without moving them
	// (FollowupEvalID of allocations rescheduled later).
	AttributeUpdates []*structs.Allocation
	// DisconnectUpdates mark allocations on disconnected nodes unknown.
	DisconnectUpdates []*structs.Allocation
	// ReconnectUpdates resume allocations whose node came back.
	ReconnectUpdates []*structs.Allocation
	// FollowupEvals are evaluations to create with the plan (WaitUntil
	// set): delayed reschedules and disconnect timeouts.
	FollowupEvals []*structs.Evaluation

	DesiredTGUpdates map[string]*structs.DesiredUpdates
}

// reconciler holds what every group's pass reads: the input, the job's
// deployments as classified once, and the result being built.
type reconciler struct {
	in  Input
	job *structs.Job

	// deployment is the current deployment (a copy: groups' states are
	// filled in); oldDeployment one of an older job version or a finished
	// one.
	deployment       *structs.Deployment
	oldDeployment    *structs.Deployment
	deploymentPaused bool
	deploymentFailed bool

	res *Result
}

// Compute reconciles the job's desired state with its allocations.
func Compute(in Input) *Result {
	if in.NewID == nil {
		n := 0
		in.NewID = func() string { n++; return "reconcile-" + strconv.Itoa(n) }
	}
	r := &reconciler{in: in, job: in.Job, res: &Result{DesiredTGUpdates: make(map[string]*structs.DesiredUpdates)}}
	if in.Deployment != nil {
		r.deployment = copyDeployment(in.Deployment)
	}
	byGroup := make(map[string]allocSet)
	for _, a := range in.Allocs {
		if a == nil {
			continue
		}
		if byGroup[a.TaskGroup] == nil {
			byGroup[a.TaskGroup] = make(allocSet)
		}
		byGroup[a.TaskGroup][a.ID] = a
	}
	stopped := in.Job == nil || in.Job.Stop
	r.cancelUnneededDeployments(stopped)
	if stopped {
		for _, name := range sortedKeys(byGroup) {
			du := r.desired(name)
			stopAll(r.res, du, in.TaintedNodes, byGroup[name], DescJobStopped)
		}
		return r.res
	}
	if d := r.deployment; d != nil {
		r.deploymentPaused = d.Status == structs.DeploymentStatusPaused ||
			d.Status == structs.DeploymentStatusPending || d.Status == structs.DeploymentStatusInitializing
		r.deploymentFailed = d.Status == structs.DeploymentStatusFailed
	}
	for _, tg := range in.Job.TaskGroups {
		if _, ok := byGroup[tg.Name]; !ok {
			byGroup[tg.Name] = allocSet{}
		}
	}
	complete := true
	for _, name := range sortedKeys(byGroup) {
		if !r.computeGroup(name, byGroup[name]) {
			complete = false
		}
	}
	r.setDeploymentStatus(complete)
	if d := r.currentDeployment(); d != nil {
		r.res.DeploymentID = d.ID
	}
	return r.res
}

func (r *reconciler) desired(group string) *structs.DesiredUpdates {
	du, ok := r.res.DesiredTGUpdates[group]
	if !ok {
		du = &structs.DesiredUpdates{}
		r.res.DesiredTGUpdates[group] = du
	}
	return du
}

// currentDeployment is the deployment placements join: the created one,
// else the version's active one.
func (r *reconciler) currentDeployment() *structs.Deployment {
	if r.res.Deployment != nil {
		return r.res.Deployment
	}
	if r.deployment != nil && r.deployment.Active() {
		return r.deployment
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
