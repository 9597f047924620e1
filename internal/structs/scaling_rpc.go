package structs

import "github.com/hashicorp/nomad/api"

// ScalingPolicyListStub is a policy as /v1/scaling/policies lists it.
type ScalingPolicyListStub = api.ScalingPolicyListStub

// ScalingPolicyListRequest lists the scaling policies of a namespace ("*"
// for all), optionally only one job's (Job) or those whose type starts with
// Type ("vertical" matches both vertical types).
type ScalingPolicyListRequest struct {
	Job  string
	Type string
	QueryOptions
}

// ScalingPolicyListResponse returns the listed policies, sorted by ID.
type ScalingPolicyListResponse struct {
	Policies []*ScalingPolicyListStub
	QueryMeta
}

// ScalingPolicySpecificRequest asks for one policy by ID.
type ScalingPolicySpecificRequest struct {
	ID string
	QueryOptions
}

// SingleScalingPolicyResponse returns one policy, nil when there is none.
type SingleScalingPolicyResponse struct {
	Policy *ScalingPolicy
	QueryMeta
}

// ScalingPolicyStub is p's list form.
func ScalingPolicyStub(p *ScalingPolicy) *ScalingPolicyListStub {
	s := &ScalingPolicyListStub{ID: p.ID, Type: p.Type, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex,
		Enabled: p.Enabled == nil || *p.Enabled, Target: map[string]string{}}
	for k, v := range p.Target {
		s.Target[k] = v
	}
	return s
}
