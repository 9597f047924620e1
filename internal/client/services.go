package client

import (
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// serviceRPC registers the nomad-provider services of this node's
// allocations with the servers (allocrunner.ServiceRegistrar).
type serviceRPC struct{ c *Client }

func (s serviceRPC) UpsertServices(regs []*structs.ServiceRegistration) error {
	req := &structs.ServiceRegistrationUpsertRequest{Services: regs,
		WriteRequest: structs.WriteRequest{Region: s.c.cfg.Region, AuthToken: s.c.secretID()}}
	var resp structs.GenericResponse
	return s.c.cfg.RPC.RPC("ServiceRegistration.Upsert", req, &resp)
}

func (s serviceRPC) DeleteService(namespace, id string) error {
	req := &structs.ServiceRegistrationDeleteByIDRequest{ID: id,
		WriteRequest: structs.WriteRequest{Region: s.c.cfg.Region, Namespace: namespace, AuthToken: s.c.secretID()}}
	var resp structs.GenericResponse
	return s.c.cfg.RPC.RPC("ServiceRegistration.DeleteByID", req, &resp)
}

func (s serviceRPC) DeleteAllocServices(nodeID, allocID string) error {
	req := &structs.ServiceRegistrationDeleteByAllocRequest{NodeID: nodeID, AllocIDs: []string{allocID},
		WriteRequest: structs.WriteRequest{Region: s.c.cfg.Region, AuthToken: s.c.secretID()}}
	var resp structs.GenericResponse
	return s.c.cfg.RPC.RPC("ServiceRegistration.DeleteByAlloc", req, &resp)
}

// AllocChecks returns the latest results of an allocation's service
// checks (404 for an allocation this client does not run).
func (c *Client) AllocChecks(allocID string) (api.AllocCheckStatuses, error) {
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return nil, structs.NewErrCoded(404, "Unknown allocation %q", allocID)
	}
	return ar.CheckStatuses(), nil
}
