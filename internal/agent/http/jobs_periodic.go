package httpapi

import (
	"io"
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// jobPeriodicOrDispatch serves /v1/job/<id>/periodic/force,
// /v1/job/<id>/dispatch and /v1/job/<id>/dispatch/payload. handled is false
// for any other sub-path.
func (s *server) jobPeriodicOrDispatch(w http.ResponseWriter, r *http.Request, id string, sub []string) (any, bool, error) {
	switch {
	case len(sub) == 2 && sub[0] == "periodic" && sub[1] == "force":
		out, err := s.jobPeriodicForce(w, r, id)
		return out, true, err
	case len(sub) == 1 && sub[0] == "dispatch":
		out, err := s.jobDispatch(w, r, id, false)
		return out, true, err
	case len(sub) == 2 && sub[0] == "dispatch" && sub[1] == "payload":
		out, err := s.jobDispatch(w, r, id, true)
		return out, true, err
	}
	return nil, false, nil
}

func (s *server) jobPeriodicForce(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	args := structs.PeriodicForceRequest{JobID: id}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.PeriodicForceResponse
	if err := s.cfg.RPC.RPC("Periodic.Force", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &reply, nil
}

// jobDispatch dispatches a parameterized job from an api.JobDispatchRequest
// body, or (rawPayload) with the raw body as payload and meta from
// meta.<key> query parameters.
func (s *server) jobDispatch(w http.ResponseWriter, r *http.Request, id string, rawPayload bool) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	args := structs.JobDispatchRequest{JobID: id}
	if rawPayload {
		if r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, structs.DispatchPayloadSizeLimit+1))
			if err != nil {
				return nil, structs.NewErrCoded(400, "reading payload: %v", err)
			}
			args.Payload = body
		}
		for k, v := range r.URL.Query() {
			if key, ok := cutMeta(k); ok && len(v) > 0 {
				if args.Meta == nil {
					args.Meta = map[string]string{}
				}
				args.Meta[key] = v[0]
			}
		}
	} else {
		var body api.JobDispatchRequest
		if err := decodeBody(r, &body, false); err != nil {
			return nil, err
		}
		if body.JobID != "" && body.JobID != id {
			return nil, structs.NewErrCoded(400, "Job ID does not match")
		}
		args.Payload, args.Meta = body.Payload, body.Meta
		args.IdPrefixTemplate, args.Priority = body.IdPrefixTemplate, body.Priority
	}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.JobDispatchResponse
	if err := s.cfg.RPC.RPC("Job.Dispatch", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &reply, nil
}

func cutMeta(k string) (string, bool) {
	const p = "meta."
	if len(k) > len(p) && k[:len(p)] == p {
		return k[len(p):], true
	}
	return "", false
}
