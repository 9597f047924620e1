package client

import (
	"github.com/drover-project/drover/internal/client/template"
	"github.com/drover-project/drover/internal/structs"
)

// templateBackend reads what task templates use (variables, services)
// from the servers, with the task's workload identity.
type templateBackend struct{ c *Client }

func (b templateBackend) opts(q template.Query) structs.QueryOptions {
	region := q.Region
	if region == "" {
		region = b.c.cfg.Region
	}
	return structs.QueryOptions{Region: region, Namespace: q.Namespace, AuthToken: q.Token,
		MinQueryIndex: q.MinIndex, MaxQueryTime: q.MaxWait, AllowStale: true}
}

func (b templateBackend) ReadVar(q template.Query, path string) (*structs.VariableDecrypted, uint64, error) {
	req := &structs.VariablesReadRequest{Path: path, QueryOptions: b.opts(q)}
	var resp structs.VariablesReadResponse
	if err := b.c.cfg.RPC.RPC("Variables.Read", req, &resp); err != nil {
		return nil, 0, err
	}
	return resp.Data, resp.Index, nil
}

func (b templateBackend) ListVars(q template.Query, prefix string) ([]*structs.VariableMetadata, uint64, error) {
	req := &structs.VariablesListRequest{QueryOptions: b.opts(q)}
	req.Prefix = prefix
	var out []*structs.VariableMetadata
	var index uint64
	for {
		var resp structs.VariablesListResponse
		if err := b.c.cfg.RPC.RPC("Variables.List", req, &resp); err != nil {
			return nil, 0, err
		}
		out = append(out, resp.Data...)
		index = max(index, resp.Index)
		if resp.NextToken == "" {
			return out, index, nil
		}
		req.NextToken = resp.NextToken
		req.MinQueryIndex = 0
	}
}

func (b templateBackend) Service(q template.Query, name, choose string) ([]*structs.ServiceRegistration, uint64, error) {
	req := &structs.ServiceRegistrationByNameRequest{ServiceName: name, Choose: choose, QueryOptions: b.opts(q)}
	var resp structs.ServiceRegistrationByNameResponse
	if err := b.c.cfg.RPC.RPC("ServiceRegistration.GetService", req, &resp); err != nil {
		return nil, 0, err
	}
	return resp.Services, resp.Index, nil
}

func (b templateBackend) Services(q template.Query) ([]*structs.ServiceRegistrationListStub, uint64, error) {
	req := &structs.ServiceRegistrationListRequest{QueryOptions: b.opts(q)}
	var resp structs.ServiceRegistrationListResponse
	if err := b.c.cfg.RPC.RPC("ServiceRegistration.List", req, &resp); err != nil {
		return nil, 0, err
	}
	return resp.Services, resp.Index, nil
}
