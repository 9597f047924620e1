package state

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func mockRegistration(alloc *structs.Allocation, name string, port int) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{
		ID:          structs.ServiceRegistrationID(alloc.ID, alloc.TaskGroup, name, "http"),
		ServiceName: name, Namespace: alloc.Namespace, NodeID: alloc.NodeID, Datacenter: "dc1",
		JobID: alloc.JobID, AllocID: alloc.ID, Tags: []string{"v1"}, Address: "10.0.0.1", Port: port,
	}
}

func TestServiceRegistrations_UpsertKeepsCreateIndexAndDeletes(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	job := storedJob(t, s, 10, mockJob("web"))
	a1, a2 := mockAlloc("a1", "n1", job), mockAlloc("a2", "n1", job)
	must(t, s.UpsertAllocs(11, []*structs.Allocation{a1, a2}))

	r1, r2 := mockRegistration(a1, "api", 8080), mockRegistration(a2, "api", 8081)
	must(t, s.UpsertServiceRegistrations(12, []*structs.ServiceRegistration{r1, r2}))
	// The same again writes nothing; a changed port is an update.
	must(t, s.UpsertServiceRegistrations(13, []*structs.ServiceRegistration{r1}))
	if idx, _ := s.Index(tableServiceRegistrations); idx != 12 {
		t.Fatalf("unchanged upsert moved the index to %d", idx)
	}
	r1b := structs.CopyServiceRegistration(r1)
	r1b.Port = 9090
	must(t, s.UpsertServiceRegistrations(14, []*structs.ServiceRegistration{r1b}))
	got, err := s.ServiceRegistrationsByName(nil, structs.DefaultNamespace, "api")
	must(t, err)
	if len(got) != 2 || got[0].ID != r1.ID || got[0].Port != 9090 || got[0].CreateIndex != 12 || got[0].ModifyIndex != 14 {
		t.Fatalf("registrations = %+v", got)
	}

	// An allocation that completes loses its registrations.
	must(t, s.UpdateAllocsFromClient(15, []*structs.Allocation{{ID: "a2", NodeID: "n1", ClientStatus: structs.AllocClientStatusComplete}}))
	if got, _ := s.ServiceRegistrationsByAlloc(nil, "a2"); len(got) != 0 {
		t.Fatalf("complete alloc kept %d registrations", len(got))
	}
	// A late upsert for it does not bring them back.
	must(t, s.UpsertServiceRegistrations(16, []*structs.ServiceRegistration{r2}))
	if got, _ := s.ServiceRegistrationsByAlloc(nil, "a2"); len(got) != 0 {
		t.Fatalf("terminal alloc re-registered")
	}

	// Deleting by ID checks the namespace.
	if err := s.DeleteServiceRegistrationByID(17, "other", r1.ID); func() int { c, _ := structs.ErrorCode(err); return c }() != 404 {
		t.Fatalf("delete in another namespace: %v", err)
	}
	must(t, s.DeleteServiceRegistrationByID(17, structs.DefaultNamespace, r1.ID))
	if r, _ := s.ServiceRegistrationByID(nil, r1.ID); r != nil {
		t.Fatalf("deleted registration still stored")
	}
}

func TestServiceRegistrations_LostAndGCAllocsDeregister(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	job := storedJob(t, s, 10, mockJob("web"))
	a1, a2 := mockAlloc("a1", "n1", job), mockAlloc("a2", "n1", job)
	must(t, s.UpsertAllocs(11, []*structs.Allocation{a1, a2}))
	must(t, s.UpsertServiceRegistrations(12, []*structs.ServiceRegistration{mockRegistration(a1, "api", 1), mockRegistration(a2, "api", 2)}))

	lost := *a1
	lost.ClientStatus = structs.AllocClientStatusLost
	lost.DesiredStatus = structs.AllocDesiredStatusStop
	must(t, s.UpsertAllocs(13, []*structs.Allocation{&lost}))
	if got, _ := s.ServiceRegistrationsByAlloc(nil, "a1"); len(got) != 0 {
		t.Fatalf("lost alloc kept its registration")
	}
	must(t, s.DeleteEval(14, nil, []string{"a2"}))
	if got, _ := s.ServiceRegistrationsByName(nil, structs.DefaultNamespace, "api"); len(got) != 0 {
		t.Fatalf("GC'd alloc kept its registration: %+v", got)
	}
	if idx, _ := s.Index(tableServiceRegistrations); idx != 14 {
		t.Fatalf("index = %d", idx)
	}
}
