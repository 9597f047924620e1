package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

func upsertServices(s *Server, regs ...*structs.ServiceRegistration) error {
	var r structs.GenericResponse
	return s.RPC("ServiceRegistration.Upsert", &structs.ServiceRegistrationUpsertRequest{Services: regs}, &r)
}

func getService(t *testing.T, s *Server, req structs.ServiceRegistrationByNameRequest) []*structs.ServiceRegistration {
	t.Helper()
	var resp structs.ServiceRegistrationByNameResponse
	if err := s.RPC("ServiceRegistration.GetService", &req, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Services
}

func svcErrCode(err error) int { c, _ := structs.ErrorCode(err); return c }

// Registrations of a placed allocation: refused with a 400 naming the
// field or the mismatch, listed per namespace, picked by ?choose
// deterministically, deleted by ID (404 when unknown), and gone when the
// allocation's node is down and it is marked lost.
func TestServiceRegistrationEndpoints(t *testing.T) {
	// The node's heartbeats expire when the test moves the clock: on the
	// wall clock (a 50 ms TTL and grace, nobody heartbeating) it went
	// down at the next heartbeat sweep after registering, about a second,
	// and a loaded race run could still be placing its allocations or
	// registering their services then (a 2 s pause there fails with
	// "placed 0").
	fc := clock.NewFake(time.Now())
	s := testServer(t, func(c *Config) {
		c.HeartbeatClock = fc
		c.MinHeartbeatTTL = 50 * time.Millisecond
		c.HeartbeatGrace = 50 * time.Millisecond
		c.FailoverHeartbeatTTL = 100 * time.Millisecond
	})
	n1 := testNode(t, s, 4000, 4096)
	resp := register(t, s, testJob("svc", 3))
	evalDone(t, s, resp.EvalID)
	allocs := liveAllocs(t, s, "svc")
	if len(allocs) != 3 {
		t.Fatalf("placed %d", len(allocs))
	}
	reg := func(a *structs.Allocation, name string) *structs.ServiceRegistration {
		return &structs.ServiceRegistration{ID: structs.ServiceRegistrationID(a.ID, "web", name, "http"), ServiceName: name,
			Namespace: "default", NodeID: a.NodeID, JobID: "svc", AllocID: a.ID, Address: "10.0.0.1", Port: 8080, Tags: []string{"t1"}}
	}

	bad := reg(allocs[0], "api")
	bad.ServiceName = ""
	if err := upsertServices(s, bad); svcErrCode(err) != 400 || !strings.Contains(err.Error(), "ServiceName") {
		t.Fatalf("missing name: %v", err)
	}
	bad = reg(allocs[0], "api")
	bad.JobID = "other"
	if err := upsertServices(s, bad); svcErrCode(err) != 400 {
		t.Fatalf("wrong job: %v", err)
	}

	var regs []*structs.ServiceRegistration
	for _, a := range allocs {
		regs = append(regs, reg(a, "api"))
	}
	regs = append(regs, reg(allocs[0], "db"))
	if err := upsertServices(s, regs...); err != nil {
		t.Fatal(err)
	}
	var list structs.ServiceRegistrationListResponse
	if err := s.RPC("ServiceRegistration.List", &structs.ServiceRegistrationListRequest{}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Services) != 1 || len(list.Services[0].Services) != 2 || list.Services[0].Services[0].ServiceName != "api" ||
		fmt.Sprint(list.Services[0].Services[0].Tags) != "[t1]" {
		t.Fatalf("list = %+v", list.Services)
	}
	if got := getService(t, s, structs.ServiceRegistrationByNameRequest{ServiceName: "api"}); len(got) != 3 {
		t.Fatalf("api has %d registrations", len(got))
	}
	c1 := getService(t, s, structs.ServiceRegistrationByNameRequest{ServiceName: "api", Choose: "2|key"})
	c2 := getService(t, s, structs.ServiceRegistrationByNameRequest{ServiceName: "api", Choose: "2|key"})
	if len(c1) != 2 || c1[0].ID != c2[0].ID || c1[1].ID != c2[1].ID {
		t.Fatalf("choose not stable: %v %v", c1, c2)
	}
	var r structs.ServiceRegistrationByNameResponse
	if err := s.RPC("ServiceRegistration.GetService", &structs.ServiceRegistrationByNameRequest{ServiceName: "api", Choose: "x"}, &r); svcErrCode(err) != 400 {
		t.Fatalf("bad choose: %v", err)
	}
	filtered := getService(t, s, structs.ServiceRegistrationByNameRequest{ServiceName: "api",
		QueryOptions: structs.QueryOptions{Filter: fmt.Sprintf("AllocID == %q", allocs[1].ID)}})
	if len(filtered) != 1 || filtered[0].AllocID != allocs[1].ID {
		t.Fatalf("filter: %+v", filtered)
	}

	var g structs.GenericResponse
	del := &structs.ServiceRegistrationDeleteByIDRequest{ID: regs[3].ID}
	if err := s.RPC("ServiceRegistration.DeleteByID", del, &g); err != nil {
		t.Fatal(err)
	}
	if err := s.RPC("ServiceRegistration.DeleteByID", del, &g); svcErrCode(err) != 404 {
		t.Fatalf("second delete: %v", err)
	}

	// The node goes down: its allocations are lost, their services gone.
	if n, _ := s.State().NodeByID(nil, n1.ID); n.Status != structs.NodeStatusReady {
		t.Fatalf("node %s before its heartbeats expired", n.Status)
	}
	fc.Advance(time.Minute)
	waitFor(t, 10*time.Second, "the down node's services to go", func() bool {
		n, _ := s.State().NodeByID(nil, n1.ID)
		got, _ := s.State().ServiceRegistrationsByName(nil, "default", "api")
		return n.Status == structs.NodeStatusDown && len(got) == 0
	})
}
