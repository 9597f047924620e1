package httpapi

import (
	"net/http"

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

// /v1/deployment/<id> and /v1/deployment/allocations/<id>. The other
// deployment actions (fail, pause, promote, ...) are not built yet: 404.
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
	case len(parts) == 0 || parts[0] == "":
		return nil, structs.NewErrCoded(400, "Missing deployment ID")
	}
	return nil, errNotFound
}
