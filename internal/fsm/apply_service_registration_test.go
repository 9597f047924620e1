package fsm

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

// Service registrations go through Raft (types 80, 81, 82), survive a
// snapshot, leave with their allocation, and publish Service events.
func TestApply_ServiceRegistrations(t *testing.T) {
	b := events.NewBroker(100)
	f, err := New(Config{Events: b})
	if err != nil {
		t.Fatal(err)
	}
	planJob := testJob("web")
	planJob.CreateIndex, planJob.ModifyIndex, planJob.JobModifyIndex = 2, 2, 2
	alloc := func(id string) *structs.Allocation {
		return &structs.Allocation{ID: id, Namespace: "default", EvalID: "e1", NodeID: "n1", JobID: "web",
			TaskGroup: "web", Name: "web.web[0]", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending}
	}
	reg := func(allocID, name string) *structs.ServiceRegistration {
		return &structs.ServiceRegistration{ID: structs.ServiceRegistrationID(allocID, "web", name, "http"), ServiceName: name,
			Namespace: "default", NodeID: "n1", JobID: "web", AllocID: allocID, Address: "10.0.0.1", Port: 80}
	}
	for _, l := range []struct {
		idx uint64
		mt  structs.MessageType
		msg any
	}{
		{1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n1")}},
		{2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("web")}},
		{3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: planJob, Alloc: []*structs.Allocation{alloc("a1"), alloc("a2")}}},
		{4, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{
			reg("a1", "api"), reg("a1", "db"), reg("a2", "api")}}},
		{5, structs.ServiceRegistrationDeleteByIDRequestType, &structs.ServiceRegistrationDeleteByIDRequest{ID: reg("a1", "db").ID,
			WriteRequest: structs.WriteRequest{Namespace: "default"}}},
	} {
		apply(t, f, entry(t, l.idx, l.mt, l.msg))
	}

	// A snapshot keeps them.
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	dst := newFSM(t, nil)
	if err := dst.Restore(nopCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatal(err)
	}
	got, _ := dst.State().ServiceRegistrationsByName(nil, "default", "api")
	if len(got) != 2 || got[0].CreateIndex != 4 || got[0].Address != "10.0.0.1" {
		t.Fatalf("restored registrations %+v", got)
	}
	if idx, _ := dst.State().Index("service_registrations"); idx != 5 {
		t.Fatalf("restored index %d", idx)
	}

	// Their client removes a2's; a1 completes and its go with it.
	apply(t, f, entry(t, 6, structs.ServiceRegistrationDeleteByAllocRequestType, &structs.ServiceRegistrationDeleteByAllocRequest{AllocIDs: []string{"a2"}}))
	apply(t, f, entry(t, 7, structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{
		{ID: "a1", NodeID: "n1", ClientStatus: structs.AllocClientStatusComplete}}}))
	if got, _ := f.State().ServiceRegistrationsByName(nil, "default", "api"); len(got) != 0 {
		t.Fatalf("registrations left: %+v", got)
	}

	sub := b.Subscribe(&events.Request{Namespace: "*", Topics: map[string][]string{"Service": {"*"}}})
	var lines []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		idx, evs, err := sub.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		for _, e := range evs {
			if js := string(e.JSON()); e.Topic != "Service" || !strings.Contains(js, `"Payload":{"Service":{"ID":`) {
				t.Fatalf("event JSON %s", js)
			}
			lines = append(lines, fmt.Sprintf("%d %s %s %s", idx, e.Type, e.Key, strings.Join(e.FilterKeys, ",")))
		}
	}
	want := []string{
		"4 ServiceRegistration " + reg("a1", "api").ID + " web,api",
		"4 ServiceRegistration " + reg("a1", "db").ID + " web,db",
		"4 ServiceRegistration " + reg("a2", "api").ID + " web,api",
		"5 ServiceDeregistration " + reg("a1", "db").ID + " web,db",
		"6 ServiceDeregistration " + reg("a2", "api").ID + " web,api",
		"7 ServiceDeregistration " + reg("a1", "api").ID + " web,api",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
