package structs

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// Nomad-native service discovery (`service { provider = "nomad" }`): the
// client registers each service of a running allocation; the servers keep
// the registrations in Raft and serve them at /v1/services and
// /v1/service/<name>.

// Raft message types of service registrations.
const (
	// ServiceRegistrationUpsertRequestType stores registrations (client).
	ServiceRegistrationUpsertRequestType MessageType = 80
	// ServiceRegistrationDeleteByIDRequestType removes one registration
	// (an operator's DELETE /v1/service/<name>/<id>).
	ServiceRegistrationDeleteByIDRequestType MessageType = 81
	// ServiceRegistrationDeleteByAllocRequestType removes every
	// registration of some allocations (their client stopped them).
	ServiceRegistrationDeleteByAllocRequestType MessageType = 82
)

// ServiceProviderNomad is the provider Drover registers services for.
const ServiceProviderNomad = "nomad"

// ServiceRegistration is one allocation's instance of a service, the wire
// type itself (JSON identical to Nomad's).
type ServiceRegistration = api.ServiceRegistration

// ServiceRegistrationListStub is one namespace's services as /v1/services
// lists them.
type ServiceRegistrationListStub = api.ServiceRegistrationListStub

// ServiceRegistrationStub is one service's name and its tags.
type ServiceRegistrationStub = api.ServiceRegistrationStub

// ServiceRegistrationID is a registration's ID as Nomad builds it:
// _nomad-task-<alloc>-<task or group>-<service>-<port label>.
func ServiceRegistrationID(allocID, owner, service, portLabel string) string {
	return fmt.Sprintf("_nomad-task-%s-%s-%s-%s", allocID, owner, service, portLabel)
}

// CopyServiceRegistration returns a copy of r that shares nothing with it.
func CopyServiceRegistration(r *ServiceRegistration) *ServiceRegistration {
	if r == nil {
		return nil
	}
	c := *r
	c.Tags = append([]string(nil), r.Tags...)
	return &c
}

// ValidateServiceRegistration checks what the servers need of one
// registration; the error names the field.
func ValidateServiceRegistration(r *ServiceRegistration) error {
	var missing []string
	if r == nil {
		return NewErrCoded(400, "service registration is missing")
	}
	for _, f := range []struct{ name, v string }{
		{"ID", r.ID}, {"ServiceName", r.ServiceName}, {"Namespace", r.Namespace},
		{"NodeID", r.NodeID}, {"JobID", r.JobID}, {"AllocID", r.AllocID},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return NewErrCoded(400, "service registration %q is missing %s", r.ID, strings.Join(missing, ", "))
	}
	if r.Port < 0 || r.Port > 65535 {
		return NewErrCoded(400, "service registration %q: Port %d is out of range", r.ID, r.Port)
	}
	return nil
}

// ServiceRegistrationUpsertRequest stores registrations (all from one node).
type ServiceRegistrationUpsertRequest struct {
	Services []*ServiceRegistration
	WriteRequest
}

// ServiceRegistrationDeleteByIDRequest removes one registration of the
// request's namespace.
type ServiceRegistrationDeleteByIDRequest struct {
	ID string
	WriteRequest
}

// ServiceRegistrationDeleteByAllocRequest removes every registration of the
// allocations (sent by their node when they stop).
type ServiceRegistrationDeleteByAllocRequest struct {
	NodeID   string
	AllocIDs []string
	WriteRequest
}

// ServiceRegistrationListRequest lists the services of a namespace ("*":
// every namespace the caller may read).
type ServiceRegistrationListRequest struct {
	QueryOptions
}

// ServiceRegistrationListResponse is the list, one stub per namespace.
type ServiceRegistrationListResponse struct {
	Services []*ServiceRegistrationListStub
	QueryMeta
}

// ServiceRegistrationByNameRequest asks for the registrations of one
// service in one namespace. Choose is Nomad's "<n>|<key>": a stable subset
// of n registrations picked by rendezvous hashing on key.
type ServiceRegistrationByNameRequest struct {
	ServiceName string
	Choose      string
	QueryOptions
}

// ServiceRegistrationByNameResponse returns the registrations, sorted by ID.
type ServiceRegistrationByNameResponse struct {
	Services []*ServiceRegistration
	QueryMeta
}

// ServiceCheck is a service's check block (the wire type).
type ServiceCheck = api.ServiceCheck
