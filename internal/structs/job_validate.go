package structs

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/client/getter"
)

// Canonicalize fills server-side defaults for fields a submitter may leave
// empty. It is idempotent.
func (j *Job) Canonicalize() {
	if j.Namespace == "" {
		j.Namespace = DefaultNamespace
	}
	if j.Region == "" {
		j.Region = DefaultRegion
	}
	if j.Type == "" {
		j.Type = JobTypeService
	}
	if j.Priority == 0 {
		j.Priority = JobDefaultPriority
	}
	if j.Name == "" {
		j.Name = j.ID
	}
	if len(j.Datacenters) == 0 {
		j.Datacenters = []string{"*"}
	}
	if j.NodePool == "" {
		j.NodePool = DefaultNodePool
	}
	for _, tg := range j.TaskGroups {
		if tg.EphemeralDisk == nil {
			tg.EphemeralDisk = &EphemeralDisk{SizeMB: 300}
		}
		if tg.RestartPolicy == nil {
			tg.RestartPolicy = DefaultRestartPolicy(j.Type)
		}
		if tg.ReschedulePolicy == nil {
			// The api client merges the job's block into its groups; a job
			// that arrives without that (RPC) must not lose it either.
			if j.Reschedule != nil {
				p := *j.Reschedule
				tg.ReschedulePolicy = &p
			} else {
				tg.ReschedulePolicy = DefaultReschedulePolicy(j.Type)
			}
		}
		canonicalizeScaling(tg.Scaling, tg.Count, ScalingPolicyTypeHorizontal)
		for _, t := range tg.Tasks {
			if t.Resources == nil {
				t.Resources = &Resources{CPU: 100, MemoryMB: 300}
			}
			if t.LogConfig == nil {
				t.LogConfig = &LogConfig{MaxFiles: 10, MaxFileSizeMB: 10}
			}
			if t.KillTimeout == 0 {
				t.KillTimeout = 5 * time.Second
			}
			for _, p := range t.ScalingPolicies {
				canonicalizeScaling(p, tg.Count, "")
			}
			if t.RestartPolicy == nil {
				rp := *tg.RestartPolicy
				t.RestartPolicy = &rp
			}
		}
	}
}

// DefaultRestartPolicy is the client restart policy for a job type.
func DefaultRestartPolicy(jobType string) *RestartPolicy {
	if jobType == JobTypeBatch || jobType == JobTypeSysBatch {
		return &RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: RestartPolicyModeFail}
	}
	return &RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: RestartPolicyModeFail}
}

// DefaultReschedulePolicy is the server reschedule policy for a job type.
func DefaultReschedulePolicy(jobType string) *ReschedulePolicy {
	switch jobType {
	case JobTypeService:
		return &ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true}
	case JobTypeBatch:
		return &ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}
	}
	return nil
}

var validJobID = regexp.MustCompile("^[^ \x00]+$")

// ValidationError lists everything wrong with a submitted job, each entry
// naming the field it is about.
type ValidationError struct {
	Errors []string
}

func (e *ValidationError) Error() string {
	if len(e.Errors) == 1 {
		return "1 error occurred:\n\t* " + e.Errors[0] + "\n"
	}
	return fmt.Sprintf("%d errors occurred:\n\t* %s\n", len(e.Errors), strings.Join(e.Errors, "\n\t* "))
}

func (e *ValidationError) add(format string, args ...any) {
	e.Errors = append(e.Errors, fmt.Sprintf(format, args...))
}

// Validate checks a canonicalized job. The error names every bad field.
func (j *Job) Validate() error {
	v := &ValidationError{}
	switch {
	case j.ID == "":
		v.add("Job.ID: missing job ID")
	case !validJobID.MatchString(j.ID):
		v.add("Job.ID: job ID %q contains a space or null character", j.ID)
	case len(j.ID) > 128:
		v.add("Job.ID: job ID must be at most 128 characters")
	}
	if j.Name == "" {
		v.add("Job.Name: missing job name")
	}
	if j.Namespace == "" {
		v.add("Job.Namespace: missing namespace")
	}
	switch j.Type {
	case JobTypeService, JobTypeBatch, JobTypeSystem, JobTypeSysBatch:
	case "":
		v.add("Job.Type: missing job type")
	default:
		v.add("Job.Type: invalid job type %q (must be service, batch, system or sysbatch)", j.Type)
	}
	if j.Priority < 1 || j.Priority > JobMaxPriority {
		v.add("Job.Priority: job priority must be between [1, %d] (got %d)", JobMaxPriority, j.Priority)
	}
	if len(j.Datacenters) == 0 {
		v.add("Job.Datacenters: missing job datacenters")
	}
	for i, dc := range j.Datacenters {
		if dc == "" {
			v.add("Job.Datacenters[%d]: datacenter must be non-empty", i)
		}
	}
	if len(j.TaskGroups) == 0 {
		v.add("Job.TaskGroups: missing job task groups")
	}
	seen := map[string]int{}
	for i, tg := range j.TaskGroups {
		if tg == nil {
			v.add("Job.TaskGroups[%d]: task group is empty", i)
			continue
		}
		if tg.Name == "" {
			v.add("Job.TaskGroups[%d].Name: missing task group name", i)
		} else if prev, ok := seen[tg.Name]; ok {
			v.add("Job.TaskGroups[%d].Name: task group %q is defined twice (also at %d)", i, tg.Name, prev)
		} else {
			seen[tg.Name] = i
		}
		tg.validate(j, v)
	}
	j.validatePeriodicAndParameterized(v)
	j.validateResourceRanges(v)
	j.validateTemplates(v)
	if len(v.Errors) > 0 {
		return v
	}
	return nil
}

func (tg *TaskGroup) validate(j *Job, v *ValidationError) {
	prefix := fmt.Sprintf("Task group %q", tg.Name)
	if tg.Count < 0 {
		v.add("%s: Count must not be negative (got %d)", prefix, tg.Count)
	}
	if (j.Type == JobTypeSystem || j.Type == JobTypeSysBatch) && tg.Count > 1 {
		v.add("%s: Count must be 0 or 1 for %s jobs (got %d)", prefix, j.Type, tg.Count)
	}
	if len(tg.Tasks) == 0 {
		v.add("%s: Tasks: missing tasks for task group", prefix)
	}
	tg.validateScaling(prefix, v)
	if tg.ShutdownDelay != nil && *tg.ShutdownDelay < 0 {
		v.add("%s: ShutdownDelay must not be negative (got %s)", prefix, *tg.ShutdownDelay)
	}
	if d := tg.MaxRunDuration; d != nil && *d != 0 {
		// Nomad's batch timeout: the client stops the allocation once it
		// has run this long; a service or system allocation is meant to
		// run until stopped.
		if *d < 0 {
			v.add("%s: MaxRunDuration must be positive (got %s)", prefix, *d)
		}
		if j.Type != JobTypeBatch && j.Type != JobTypeSysBatch {
			v.add("%s: MaxRunDuration (max_run_duration) is only supported for batch and sysbatch jobs, not %s jobs", prefix, j.Type)
		}
	}
	if tg.EphemeralDisk != nil && tg.EphemeralDisk.SizeMB < 0 {
		v.add("%s: EphemeralDisk.SizeMB must not be negative", prefix)
	}
	if rp := tg.RestartPolicy; rp != nil {
		validateRestart(prefix+": RestartPolicy", rp, v)
	}
	if u := tg.Update; u != nil {
		if j.Type != JobTypeService && j.Type != JobTypeSystem {
			// Only deployments (service) and rolling system updates use it.
			v.add("%s: Job type %q does not allow update block", prefix, j.Type)
		}
		validateUpdate(prefix+": Update", u, v)
	}
	if tg.Migrate != nil && j.Type != JobTypeService {
		// Only a service group's allocations are migrated off a draining
		// node by the migrate block; the others are stopped or left.
		v.add("%s: Job type %q does not allow migrate block", prefix, j.Type)
	}
	staticPorts := map[string]string{}
	labels := map[string]bool{}
	for ni, n := range tg.Networks {
		if n == nil {
			continue
		}
		switch n.Mode {
		case "", "host", "bridge", "none":
		default:
			if !strings.HasPrefix(n.Mode, "cni/") {
				v.add("%s: Networks[%d].Mode: invalid network mode %q", prefix, ni, n.Mode)
			}
		}
		for _, p := range append(append([]Port{}, n.ReservedPorts...), n.DynamicPorts...) {
			if p.Label == "" {
				v.add("%s: Networks[%d]: port label must not be empty", prefix, ni)
				continue
			}
			if labels[p.Label] {
				v.add("%s: Networks[%d]: port label %q is used more than once", prefix, ni, p.Label)
			}
			labels[p.Label] = true
			if p.Value < 0 || p.Value >= MaxValidPort {
				v.add("%s: Networks[%d]: port %q has invalid static value %d", prefix, ni, p.Label, p.Value)
			}
			if p.To < -1 || p.To >= MaxValidPort {
				v.add("%s: Networks[%d]: port %q has invalid \"to\" value %d", prefix, ni, p.Label, p.To)
			}
			if p.Value > 0 {
				key := fmt.Sprintf("%s:%d", p.HostNetwork, p.Value)
				if other, ok := staticPorts[key]; ok {
					v.add("%s: Networks[%d]: static port %d is used by both %q and %q", prefix, ni, p.Value, other, p.Label)
				}
				staticPorts[key] = p.Label
			}
		}
	}
	tasks := map[string]bool{}
	leaders := 0
	for ti, t := range tg.Tasks {
		if t == nil {
			v.add("%s: Tasks[%d]: task is empty", prefix, ti)
			continue
		}
		tp := fmt.Sprintf("%s, task %q", prefix, t.Name)
		t.validateScaling(tp, v)
		if t.Name == "" {
			v.add("%s: Tasks[%d].Name: missing task name", prefix, ti)
		} else if tasks[t.Name] {
			v.add("%s: Tasks[%d].Name: task %q is defined twice", prefix, ti, t.Name)
		}
		tasks[t.Name] = true
		if strings.ContainsAny(t.Name, "/\\\x00") {
			v.add("%s: Name: task name must not contain a slash or null character", tp)
		}
		if t.Driver == "" {
			v.add("%s: Driver: missing task driver", tp)
		}
		validateConfigDepth(tp, t.Config, v)
		if t.Leader {
			leaders++
		}
		if t.KillTimeout < 0 {
			v.add("%s: KillTimeout must not be negative", tp)
		}
		if t.ShutdownDelay < 0 {
			v.add("%s: ShutdownDelay must not be negative (got %s)", tp, t.ShutdownDelay)
		}
		if r := t.Resources; r != nil {
			if r.CPU < 1 && r.Cores == 0 {
				v.add("%s: Resources.CPU must be at least 1 MHz (got %d)", tp, r.CPU)
			}
			if r.MemoryMB < 10 {
				v.add("%s: Resources.MemoryMB must be at least 10 MB (got %d)", tp, r.MemoryMB)
			}
			if r.MemoryMaxMB != 0 && r.MemoryMaxMB < r.MemoryMB {
				v.add("%s: Resources.MemoryMaxMB (%d) must be at least MemoryMB (%d)", tp, r.MemoryMaxMB, r.MemoryMB)
			}
		}
		if rp := t.RestartPolicy; rp != nil {
			validateRestart(tp+": RestartPolicy", rp, v)
		}
		if lc := t.LogConfig; lc != nil {
			if lc.MaxFiles < 1 {
				v.add("%s: LogConfig.MaxFiles must be at least 1", tp)
			}
			if lc.MaxFileSizeMB < 1 {
				v.add("%s: LogConfig.MaxFileSizeMB must be at least 1", tp)
			}
		}
		for ai, a := range t.Artifacts {
			validateArtifact(fmt.Sprintf("%s: Artifacts[%d]", tp, ai), a, v)
		}
		if t.Lifecycle != nil {
			switch t.Lifecycle.Hook {
			case "prestart", "poststart", "poststop":
			default:
				v.add("%s: Lifecycle.Hook: invalid hook %q", tp, t.Lifecycle.Hook)
			}
		}
	}
	if leaders > 1 {
		v.add("%s: only one task may be marked as leader", prefix)
	}
	tg.validateNomadServices(prefix, v)
	tg.validateVolumes(j, prefix, v)
}

// validateUpdate checks an update block as Nomad does; unset fields (not
// yet canonicalized) are left alone.
func validateUpdate(prefix string, u *UpdateStrategy, v *ValidationError) {
	dur := func(d *time.Duration) time.Duration {
		if d == nil {
			return 0
		}
		return *d
	}
	if u.HealthCheck != nil {
		switch *u.HealthCheck {
		case "", "checks", "task_states", "manual":
		default:
			v.add("%s.HealthCheck: invalid health check %q (checks, task_states or manual)", prefix, *u.HealthCheck)
		}
	}
	if u.MaxParallel != nil && *u.MaxParallel < 0 {
		v.add("%s.MaxParallel must not be negative (got %d)", prefix, *u.MaxParallel)
	}
	if u.Canary != nil && *u.Canary < 0 {
		v.add("%s.Canary must not be negative (got %d)", prefix, *u.Canary)
	}
	if u.AutoPromote != nil && *u.AutoPromote && (u.Canary == nil || *u.Canary == 0) {
		v.add("%s.AutoPromote needs a Canary count greater than zero", prefix)
	}
	if u.MinHealthyTime != nil && *u.MinHealthyTime < 0 {
		v.add("%s.MinHealthyTime must not be negative", prefix)
	}
	if u.HealthyDeadline != nil && *u.HealthyDeadline <= 0 {
		v.add("%s.HealthyDeadline must be greater than zero", prefix)
	}
	if u.ProgressDeadline != nil && *u.ProgressDeadline < 0 {
		v.add("%s.ProgressDeadline must not be negative", prefix)
	}
	if u.Stagger != nil && *u.Stagger <= 0 {
		v.add("%s.Stagger must be greater than zero", prefix)
	}
	if u.MinHealthyTime != nil && u.HealthyDeadline != nil && dur(u.MinHealthyTime) >= dur(u.HealthyDeadline) {
		v.add("%s: MinHealthyTime (%v) must be less than HealthyDeadline (%v)", prefix, dur(u.MinHealthyTime), dur(u.HealthyDeadline))
	}
	if u.HealthyDeadline != nil && dur(u.ProgressDeadline) > 0 && dur(u.HealthyDeadline) >= dur(u.ProgressDeadline) {
		v.add("%s: HealthyDeadline (%v) must be less than ProgressDeadline (%v)", prefix, dur(u.HealthyDeadline), dur(u.ProgressDeadline))
	}
}

func validateRestart(prefix string, rp *RestartPolicy, v *ValidationError) {
	if rp.Attempts < 0 {
		v.add("%s.Attempts must not be negative", prefix)
	}
	if rp.Delay < 0 || rp.Interval < 0 {
		v.add("%s: Delay and Interval must not be negative", prefix)
	}
	switch rp.Mode {
	case RestartPolicyModeDelay, RestartPolicyModeFail:
	default:
		v.add("%s.Mode: unsupported restart mode %q", prefix, rp.Mode)
	}
	if rp.Attempts > 0 && rp.Interval > 0 && time.Duration(rp.Attempts)*rp.Delay > rp.Interval {
		v.add("%s: Nomad can't restart %d times with a delay of %v within an interval of %v", prefix, rp.Attempts, rp.Delay, rp.Interval)
	}
}

// validateArtifact checks an artifact block as Nomad does: a source, a
// known mode, a destination inside the allocation directory, and options
// (checksum, archive) that can be read. Sources Drover cannot fetch (git,
// s3, xz archives...) are left to the unsupported-feature check, which
// says so.
func validateArtifact(prefix string, a *TaskArtifact, v *ValidationError) {
	if a == nil {
		v.add("%s: artifact is empty", prefix)
		return
	}
	src := ""
	if a.GetterSource != nil {
		src = *a.GetterSource
	}
	if strings.TrimSpace(src) == "" {
		v.add("%s: source must be specified", prefix)
	} else if err := getter.CheckSource(src, a.GetterOptions); err != nil {
		var ue *getter.UnsupportedError
		if !errors.As(err, &ue) {
			v.add("%s: %v", prefix, err)
		}
	}
	if a.GetterMode != nil {
		switch *a.GetterMode {
		case "", "any", "file", "dir":
		default:
			v.add("%s: mode %q is invalid (want any, file or dir)", prefix, *a.GetterMode)
		}
	}
	if a.RelativeDest != nil && !strings.Contains(*a.RelativeDest, "${") {
		if err := getter.CheckDestination(*a.RelativeDest); err != nil {
			v.add("%s: %v", prefix, err)
		}
	}
}
