package state

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// tableServiceRegistrations keeps the Nomad-native service registrations
// (`provider = "nomad"`) of running allocations. Clients write them; the
// store itself removes an allocation's registrations when the allocation
// becomes client-terminal (complete, failed or lost: a down node's allocs
// are marked lost) or is garbage collected, as Nomad does.
const tableServiceRegistrations = "service_registrations"

var (
	svcRegID    = func(r *structs.ServiceRegistration) string { return r.ID }
	svcRegNS    = func(r *structs.ServiceRegistration) string { return r.Namespace }
	svcRegName  = func(r *structs.ServiceRegistration) string { return r.ServiceName }
	svcRegAlloc = func(r *structs.ServiceRegistration) string { return r.AllocID }
	svcRegJob   = func(r *structs.ServiceRegistration) string { return r.JobID }
)

func serviceRegistrationsTable() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableServiceRegistrations,
		Indexes: map[string]*memdb.IndexSchema{
			"id":           idIndex(svcRegID),
			"service_name": nsIDIndex("service_name", svcRegID, svcRegNS, svcRegName),
			"job":          nsIDIndex("job", svcRegID, svcRegNS, svcRegJob),
			"alloc_id": {
				Name:         "alloc_id",
				AllowMissing: true,
				Indexer:      newCompoundKey("alloc_id", svcRegID, nil, field("alloc_id.alloc", svcRegAlloc)),
			},
		},
	}
}

// UpsertServiceRegistrations stores registrations. One that is unchanged
// (but for its indexes) is not written again; CreateIndex is kept across
// updates. Registrations of allocations that are unknown or already
// client-terminal are dropped: a late upsert must not resurrect a service
// whose allocation is gone.
func (s *StateStore) UpsertServiceRegistrations(index uint64, regs []*structs.ServiceRegistration) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	changed := false
	for _, in := range regs {
		if in == nil {
			continue
		}
		a, err := allocLookup(txn, in.AllocID)
		if err != nil {
			return err
		}
		if a == nil || a.ClientTerminalStatus() {
			continue
		}
		r := structs.CopyServiceRegistration(in)
		r.CreateIndex, r.ModifyIndex = index, index
		raw, err := txn.First(tableServiceRegistrations, "id", r.ID)
		if err != nil {
			return fmt.Errorf("state: service registration lookup: %w", err)
		}
		if ex, ok := raw.(*structs.ServiceRegistration); ok {
			if sameRegistration(ex, r) {
				continue
			}
			r.CreateIndex = ex.CreateIndex
		}
		if err := txn.Insert(tableServiceRegistrations, r); err != nil {
			return fmt.Errorf("state: service registration insert: %w", err)
		}
		changed = true
	}
	if !changed {
		return nil
	}
	if err := bumpIndex(txn, index, tableServiceRegistrations); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

func sameRegistration(a, b *structs.ServiceRegistration) bool {
	x, y := *a, *b
	x.CreateIndex, x.ModifyIndex, y.CreateIndex, y.ModifyIndex = 0, 0, 0, 0
	return reflect.DeepEqual(x, y)
}

// DeleteServiceRegistrationByID removes one registration of namespace; an
// unknown one is a coded 404.
func (s *StateStore) DeleteServiceRegistrationByID(index uint64, namespace, id string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	raw, err := txn.First(tableServiceRegistrations, "id", id)
	if err != nil {
		return fmt.Errorf("state: service registration lookup: %w", err)
	}
	r, ok := raw.(*structs.ServiceRegistration)
	if !ok || r.Namespace != namespace {
		return structs.NewErrCoded(404, "service registration not found")
	}
	if err := txn.Delete(tableServiceRegistrations, r); err != nil {
		return fmt.Errorf("state: service registration delete: %w", err)
	}
	if err := bumpIndex(txn, index, tableServiceRegistrations); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// DeleteServiceRegistrationsByAlloc removes every registration of the
// allocations.
func (s *StateStore) DeleteServiceRegistrationsByAlloc(index uint64, allocIDs []string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	for _, id := range allocIDs {
		if err := deleteAllocServices(txn, index, id); err != nil {
			return err
		}
	}
	txn.Commit()
	return nil
}

// deleteAllocServices removes an allocation's registrations inside a write.
func deleteAllocServices(txn *memdb.Txn, index uint64, allocID string) error {
	n, err := txn.DeleteAll(tableServiceRegistrations, "alloc_id", allocID)
	if err != nil {
		return fmt.Errorf("state: service registration delete: %w", err)
	}
	if n == 0 {
		return nil
	}
	return bumpIndex(txn, index, tableServiceRegistrations)
}

// ServiceRegistrations iterates every registration (snapshots, listing).
func (s *reader) ServiceRegistrations(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableServiceRegistrations, "id")
}

// ServiceRegistrationsByName returns one service's registrations in
// namespace, sorted by ID. The caller must not modify them.
func (s *reader) ServiceRegistrationsByName(ws memdb.WatchSet, namespace, name string) ([]*structs.ServiceRegistration, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := get(txn, ws, tableServiceRegistrations, "service_name", namespace, name)
	if err != nil {
		return nil, err
	}
	return collectRegistrations(iter), nil
}

// ServiceRegistrationsByJob returns a job's registrations, sorted by ID.
func (s *reader) ServiceRegistrationsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.ServiceRegistration, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := get(txn, ws, tableServiceRegistrations, "job", namespace, jobID)
	if err != nil {
		return nil, err
	}
	return collectRegistrations(iter), nil
}

// ServiceRegistrationsByAlloc returns an allocation's registrations,
// sorted by ID.
func (s *reader) ServiceRegistrationsByAlloc(ws memdb.WatchSet, allocID string) ([]*structs.ServiceRegistration, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := get(txn, ws, tableServiceRegistrations, "alloc_id", allocID)
	if err != nil {
		return nil, err
	}
	return collectRegistrations(iter), nil
}

// ServiceRegistrationByID returns one registration, or nil.
func (s *reader) ServiceRegistrationByID(ws memdb.WatchSet, id string) (*structs.ServiceRegistration, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableServiceRegistrations, "id", id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.ServiceRegistration), nil
}

func collectRegistrations(iter memdb.ResultIterator) []*structs.ServiceRegistration {
	var out []*structs.ServiceRegistration
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.ServiceRegistration))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ServiceRegistrationRestore loads a registration from a snapshot.
func (r *StateRestore) ServiceRegistrationRestore(reg *structs.ServiceRegistration) error {
	return r.insert(tableServiceRegistrations, reg)
}
