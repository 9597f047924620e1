package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/job/<id>/revert, /stable, /scale (writes) and /versions/<tag>/tag.

func (s *server) jobRevert(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var body api.JobRevertRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if body.JobID != "" && body.JobID != id {
		return nil, structs.NewErrCoded(400, "Job ID does not match")
	}
	args := structs.JobRevertRequest{JobID: id, JobVersion: body.JobVersion, EnforcePriorVersion: body.EnforcePriorVersion}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.JobRegisterResponse
	if err := s.cfg.RPC.RPC("Job.Revert", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &reply, nil
}

func (s *server) jobStable(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var body api.JobStabilityRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if body.JobID != "" && body.JobID != id {
		return nil, structs.NewErrCoded(400, "Job ID does not match")
	}
	args := structs.JobStabilityRequest{JobID: id, JobVersion: body.JobVersion, Stable: body.Stable}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.JobStabilityResponse
	if err := s.cfg.RPC.RPC("Job.Stable", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &reply, nil
}

func (s *server) jobScale(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	var body api.ScalingRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if job := body.Target["Job"]; job != "" && job != id {
		return nil, structs.NewErrCoded(400, "job ID in payload did not match URL")
	}
	args := structs.JobScaleRequest{JobID: id, Target: body.Target, Count: body.Count, Message: body.Message,
		Error: body.Error, Meta: body.Meta, PolicyOverride: body.PolicyOverride}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.JobRegisterResponse
	if err := s.cfg.RPC.RPC("Job.Scale", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &reply, nil
}

func (s *server) jobTagVersion(w http.ResponseWriter, r *http.Request, id, name string) (any, error) {
	args := structs.JobTagRequest{JobID: id, Name: name}
	switch {
	case isWrite(r.Method):
		var body api.TagVersionRequest
		if err := decodeBody(r, &body, false); err != nil {
			return nil, err
		}
		args.Version = body.Version
		args.Tag = &structs.JobVersionTag{Name: name, Description: body.Description}
	case r.Method == http.MethodDelete:
		args.Unset = true
	default:
		return nil, errInvalidMethod
	}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.GenericResponse
	if err := s.cfg.RPC.RPC("Job.TagVersion", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}
