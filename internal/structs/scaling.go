package structs

import (
	"fmt"
	"sort"
)

// Scaling policies: a group's `scaling` block (horizontal: the count an
// external autoscaler may set) and a task's `scaling "cpu"|"mem"` blocks
// (vertical). They live inside the job spec; the server gives each an ID
// before the job is written, and the state store serves them as a table of
// their own, keyed by that ID.

// Scaling policy types.
const (
	ScalingPolicyTypeHorizontal  = "horizontal"
	ScalingPolicyTypeVerticalCPU = "vertical_cpu"
	ScalingPolicyTypeVerticalMem = "vertical_mem"
)

// Keys of a scaling policy's Target.
const (
	ScalingTargetNamespace = "Namespace"
	ScalingTargetJob       = "Job"
	ScalingTargetGroup     = "Group"
	ScalingTargetTask      = "Task"
)

// canonicalizeScaling fills a policy's defaults as Nomad does: enabled,
// min = the group's count, and the type its place implies.
func canonicalizeScaling(p *ScalingPolicy, count int, typ string) {
	if p == nil {
		return
	}
	if p.Enabled == nil {
		t := true
		p.Enabled = &t
	}
	if p.Min == nil && typ == ScalingPolicyTypeHorizontal {
		m := int64(count)
		p.Min = &m
	}
	if p.Type == "" {
		p.Type = typ
	}
}

// validateScaling checks a group's scaling block (its count is checked
// by ScalingCountErrors).
func (tg *TaskGroup) validateScaling(prefix string, v *ValidationError) {
	p := tg.Scaling
	if p == nil {
		return
	}
	prefix += ": Scaling"
	if p.Type != ScalingPolicyTypeHorizontal {
		v.add("%s.Type: a group scaling policy must be of type %q (got %q)", prefix, ScalingPolicyTypeHorizontal, p.Type)
	}
	validateScalingBounds(prefix, p, v)
}

// ScalingCountErrors lists the groups whose count is outside their scaling
// policy's [min, max]. It is apart from Validate because a job scale with
// PolicyOverride may set such a count.
func (j *Job) ScalingCountErrors() []string {
	var out []string
	for _, tg := range j.TaskGroups {
		if tg == nil || tg.Scaling == nil {
			continue
		}
		p := tg.Scaling
		prefix := fmt.Sprintf("Task group %q: Scaling", tg.Name)
		if p.Min != nil && int64(tg.Count) < *p.Min {
			out = append(out, fmt.Sprintf("%s: task group count must not be less than minimum count in scaling policy (%d < %d)", prefix, tg.Count, *p.Min))
		}
		if p.Max != nil && int64(tg.Count) > *p.Max {
			out = append(out, fmt.Sprintf("%s: task group count must not be greater than maximum count in scaling policy (%d > %d)", prefix, tg.Count, *p.Max))
		}
	}
	return out
}

// validateScaling checks a task's vertical scaling policies.
func (t *Task) validateScaling(prefix string, v *ValidationError) {
	seen := map[string]bool{}
	for i, p := range t.ScalingPolicies {
		if p == nil {
			v.add("%s: ScalingPolicies[%d]: policy is empty", prefix, i)
			continue
		}
		pp := fmt.Sprintf("%s: ScalingPolicies[%d]", prefix, i)
		switch p.Type {
		case ScalingPolicyTypeVerticalCPU, ScalingPolicyTypeVerticalMem:
		default:
			v.add("%s.Type: a task scaling policy must be of type %q or %q (got %q)", pp, ScalingPolicyTypeVerticalCPU, ScalingPolicyTypeVerticalMem, p.Type)
		}
		if seen[p.Type] {
			v.add("%s.Type: task has more than one %q scaling policy", pp, p.Type)
		}
		seen[p.Type] = true
		validateScalingBounds(pp, p, v)
	}
}

func validateScalingBounds(prefix string, p *ScalingPolicy, v *ValidationError) {
	if p.Max == nil {
		v.add("%s.Max: maximum count must be specified", prefix)
	} else if *p.Max < 0 {
		v.add("%s.Max: maximum count must not be negative (got %d)", prefix, *p.Max)
	}
	if p.Min != nil && *p.Min < 0 {
		v.add("%s.Min: minimum count must not be negative (got %d)", prefix, *p.Min)
	}
	if p.Min != nil && p.Max != nil && *p.Max < *p.Min {
		v.add("%s: maximum count must not be less than minimum count (%d < %d)", prefix, *p.Max, *p.Min)
	}
}

// ScalingPolicyKey names a policy's target within its job: the group, and
// for a vertical policy the task and type. A policy keeps its ID across job
// versions while its key stays the same.
func ScalingPolicyKey(p *ScalingPolicy) string {
	if p == nil || p.Target == nil {
		return ""
	}
	k := p.Target[ScalingTargetGroup]
	if task := p.Target[ScalingTargetTask]; task != "" {
		k += "\x00" + task + "\x00" + p.Type
	}
	return k
}

// ScalingPolicies returns the job's scaling policies (group ones first, in
// group order, then each task's), with their Namespace and Target filled.
// The returned policies are the job's own: callers copy before changing.
func (j *Job) ScalingPolicies() []*ScalingPolicy {
	var out []*ScalingPolicy
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		if tg.Scaling != nil {
			out = append(out, tg.Scaling)
		}
	}
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			if t == nil {
				continue
			}
			out = append(out, t.ScalingPolicies...)
		}
	}
	return out
}

// SetScalingTargets fills each policy's Namespace and Target from where it
// sits in the job. The server calls it before giving policies their IDs.
func (j *Job) SetScalingTargets() {
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		if p := tg.Scaling; p != nil {
			p.Namespace = j.Namespace
			p.Target = map[string]string{
				ScalingTargetNamespace: j.Namespace, ScalingTargetJob: j.ID, ScalingTargetGroup: tg.Name,
			}
		}
		for _, t := range tg.Tasks {
			if t == nil {
				continue
			}
			for _, p := range t.ScalingPolicies {
				if p == nil {
					continue
				}
				p.Namespace = j.Namespace
				p.Target = map[string]string{
					ScalingTargetNamespace: j.Namespace, ScalingTargetJob: j.ID,
					ScalingTargetGroup: tg.Name, ScalingTargetTask: t.Name,
				}
			}
		}
	}
}

// AssignScalingPolicyIDs gives each of the job's policies an ID: the one
// the same target had in prev (the job's current version), or one from
// newID. Targets must be set (SetScalingTargets).
func (j *Job) AssignScalingPolicyIDs(prev *Job, newID func() string) {
	old := map[string]string{}
	if prev != nil {
		for _, p := range prev.ScalingPolicies() {
			if p != nil && p.ID != "" {
				old[ScalingPolicyKey(p)] = p.ID
			}
		}
	}
	for _, p := range j.ScalingPolicies() {
		if p == nil {
			continue
		}
		if id, ok := old[ScalingPolicyKey(p)]; ok {
			p.ID = id
		} else {
			p.ID = newID()
		}
		p.CreateIndex, p.ModifyIndex = 0, 0
	}
}

// SortScalingPolicies orders policies by ID, as lists are served.
func SortScalingPolicies(ps []*ScalingPolicy) {
	sort.Slice(ps, func(a, b int) bool { return ps[a].ID < ps[b].ID })
}
