package fsm

import (
	"github.com/drover-project/drover/internal/structs"
)

// applyServiceRegistrationUpsert stores the registrations a client made
// for its running allocations.
func (f *FSM) applyServiceRegistrationUpsert(buf []byte, index uint64) error {
	var req structs.ServiceRegistrationUpsertRequest
	if err := decode(buf, &req, "service registration upsert"); err != nil {
		return err
	}
	return f.State().UpsertServiceRegistrations(index, req.Services)
}

// applyServiceRegistrationDeleteByID removes one registration (operator).
func (f *FSM) applyServiceRegistrationDeleteByID(buf []byte, index uint64) error {
	var req structs.ServiceRegistrationDeleteByIDRequest
	if err := decode(buf, &req, "service registration delete"); err != nil {
		return err
	}
	return f.State().DeleteServiceRegistrationByID(index, req.Namespace, req.ID)
}

// applyServiceRegistrationDeleteByAlloc removes the registrations of
// allocations their client stopped.
func (f *FSM) applyServiceRegistrationDeleteByAlloc(buf []byte, index uint64) error {
	var req structs.ServiceRegistrationDeleteByAllocRequest
	if err := decode(buf, &req, "service registration delete by alloc"); err != nil {
		return err
	}
	return f.State().DeleteServiceRegistrationsByAlloc(index, req.AllocIDs)
}
