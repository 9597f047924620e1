package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// deploymentsOut keeps empty lists as [] on the wire.
func deploymentsOut(ds []*structs.Deployment) []*structs.Deployment {
	if ds == nil {
		return []*structs.Deployment{}
	}
	return ds
}

// /v1/deployments: list deployments.
func (s *server) deploymentsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.GenericRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.DeploymentListResponse
	if err := s.cfg.RPC.RPC("Deployment.List", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	return deploymentsOut(reply.Deployments), nil
}

// /v1/deployment/<id>, /v1/deployment/allocations/<id> and the actions
// /v1/deployment/{fail,pause,promote,allocation-health,unblock}/<id>.
func (s *server) deploymentSpecificRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/deployment/")
	if err != nil {
		return nil, err
	}
	switch {
	case len(parts) == 1 && parts[0] != "":
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
		args := structs.DeploymentSpecificRequest{DeploymentID: parts[0]}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.SingleDeploymentResponse
		if err := s.cfg.RPC.RPC("Deployment.GetDeployment", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		if reply.Deployment == nil {
			return nil, structs.ErrUnknownDeployment
		}
		return reply.Deployment, nil
	case len(parts) == 2 && parts[0] == "allocations" && parts[1] != "":
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
		args := structs.DeploymentSpecificRequest{DeploymentID: parts[1]}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.AllocListResponse
		if err := s.cfg.RPC.RPC("Deployment.Allocations", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		return nonNil(reply.Allocations), nil
	case len(parts) == 2 && deploymentActions[parts[0]] != nil:
		if parts[1] == "" {
			return nil, structs.NewErrCoded(400, "Missing deployment ID")
		}
		if !isWrite(r.Method) {
			return nil, errInvalidMethod
		}
		return deploymentActions[parts[0]](s, w, r, parts[1])
	case len(parts) == 0 || parts[0] == "":
		return nil, structs.NewErrCoded(400, "Missing deployment ID")
	}
	return nil, errNotFound
}

// deploymentActions are the writes on one deployment, by path segment.
var deploymentActions = map[string]func(s *server, w http.ResponseWriter, r *http.Request, id string) (any, error){
	"fail":              (*server).deploymentFail,
	"pause":             (*server).deploymentPause,
	"promote":           (*server).deploymentPromote,
	"allocation-health": (*server).deploymentAllocHealth,
	"unblock":           (*server).deploymentUnblock,
}

// idMatches refuses a body naming another deployment than the path.
func idMatches(body, path string) error {
	if body != "" && body != path {
		return structs.NewErrCoded(400, "Deployment ID does not match: body has DeploymentID %q, path %q", body, path)
	}
	return nil
}

// deploymentWrite sends one deployment action and answers its response.
func (s *server) deploymentWrite(w http.ResponseWriter, method string, args any) (any, error) {
	var reply structs.DeploymentUpdateResponse
	if err := s.cfg.RPC.RPC(method, args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &reply, nil
}

func (s *server) deploymentFail(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	var body api.DeploymentFailRequest
	if err := decodeBody(r, &body, true); err != nil {
		return nil, err
	}
	if err := idMatches(body.DeploymentID, id); err != nil {
		return nil, err
	}
	args := structs.DeploymentFailRequest{DeploymentID: id}
	s.parseWrite(r, &args.WriteRequest)
	return s.deploymentWrite(w, "Deployment.Fail", &args)
}

func (s *server) deploymentUnblock(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	var body api.DeploymentUnblockRequest
	if err := decodeBody(r, &body, true); err != nil {
		return nil, err
	}
	if err := idMatches(body.DeploymentID, id); err != nil {
		return nil, err
	}
	args := structs.DeploymentUnblockRequest{DeploymentID: id}
	s.parseWrite(r, &args.WriteRequest)
	return s.deploymentWrite(w, "Deployment.Unblock", &args)
}

// The pause body must say whether to pause: {"Pause": true|false}.
func (s *server) deploymentPause(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	var body struct {
		DeploymentID string
		Pause        *bool
	}
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if err := idMatches(body.DeploymentID, id); err != nil {
		return nil, err
	}
	if body.Pause == nil {
		return nil, structs.NewErrCoded(400, "Missing Pause: the body must be {\"Pause\": true} to pause or {\"Pause\": false} to resume")
	}
	args := structs.DeploymentPauseRequest{DeploymentID: id, Pause: *body.Pause}
	s.parseWrite(r, &args.WriteRequest)
	return s.deploymentWrite(w, "Deployment.Pause", &args)
}

func (s *server) deploymentPromote(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	var body api.DeploymentPromoteRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if err := idMatches(body.DeploymentID, id); err != nil {
		return nil, err
	}
	args := structs.DeploymentPromoteRequest{DeploymentID: id, All: body.All, Groups: body.Groups}
	s.parseWrite(r, &args.WriteRequest)
	return s.deploymentWrite(w, "Deployment.Promote", &args)
}

func (s *server) deploymentAllocHealth(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	var body api.DeploymentAllocHealthRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if err := idMatches(body.DeploymentID, id); err != nil {
		return nil, err
	}
	args := structs.DeploymentAllocHealthRequest{DeploymentID: id,
		HealthyAllocationIDs: body.HealthyAllocationIDs, UnhealthyAllocationIDs: body.UnhealthyAllocationIDs}
	s.parseWrite(r, &args.WriteRequest)
	return s.deploymentWrite(w, "Deployment.SetAllocHealth", &args)
}

// /v1/job/<id>/promote: promote the job's latest deployment; the body is
// {"All": bool, "Groups": [...]} as for /v1/deployment/promote/<id>.
func (s *server) jobPromote(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var body api.DeploymentPromoteRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	q := structs.JobSpecificRequest{JobID: id}
	q.Region, q.Namespace, q.AuthToken = s.requestRegion(r), requestNamespace(r), requestToken(r)
	var latest structs.SingleDeploymentResponse
	if err := s.cfg.RPC.RPC("Job.LatestDeployment", &q, &latest); err != nil {
		return nil, err
	}
	if latest.Deployment == nil {
		return nil, structs.NewErrCoded(404, "job %q has no deployment to promote", id)
	}
	if err := idMatches(body.DeploymentID, latest.Deployment.ID); err != nil {
		return nil, err
	}
	args := structs.DeploymentPromoteRequest{DeploymentID: latest.Deployment.ID, All: body.All, Groups: body.Groups}
	s.parseWrite(r, &args.WriteRequest)
	return s.deploymentWrite(w, "Deployment.Promote", &args)
}
