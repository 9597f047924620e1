package integration

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// With client { detect_foreign_ports = true }, a port held by a process
// Drover did not start is never handed to a task (seed 002).
func TestForeignPortsAreNeverAssigned(t *testing.T) {
	// Hold one port in the middle of a five-port dynamic range.
	foreign, err := net.Listen("tcp", "127.0.0.1:20102")
	if err != nil {
		t.Skipf("port 20102 is in use here: %v", err)
	}
	defer foreign.Close()

	a := startAgent(t, "", []string{"-dev"}, map[string]any{
		"client": map[string]any{"detect_foreign_ports": true, "min_dynamic_port": 20100, "max_dynamic_port": 20104},
	})
	a.waitReady(true)
	// A group asking for four dynamic ports gets exactly the four free ones.
	job := rawExecJob("ports", "service", 1, "exec sleep 600")
	job.TaskGroups[0].Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "a"}, {Label: "b"}, {Label: "c"}, {Label: "d"}}}}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var got []int
	waitFor(t, 20*time.Second, "alloc with four ports", func() bool {
		stubs := a.allocsOf("ports")
		if len(stubs) != 1 {
			return false
		}
		alloc, _, err := a.client.Allocations().Info(stubs[0].ID, nil)
		if err != nil || alloc.AllocatedResources == nil {
			return false
		}
		got = got[:0]
		for _, p := range alloc.AllocatedResources.Shared.Ports {
			got = append(got, p.Value)
		}
		return len(got) == 4
	})
	slices.Sort(got)
	if want := []int{20100, 20101, 20103, 20104}; !slices.Equal(got, want) {
		t.Fatalf("ports %v, want %v (20102 is held by another process)", got, want)
	}

	// 127.0.0.1's range is now exhausted. The node also has ::1 (the dev
	// node's loopback interface carries both), where 20102 is free, so a
	// second ask may land there — but never on the held 127.0.0.1:20102.
	more := rawExecJob("more", "service", 3, "exec sleep 600")
	more.TaskGroups[0].Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "x"}}}}
	if _, _, err := a.client.Jobs().Register(more, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "three more allocs", func() bool { return len(a.allocsOf("more")) == 3 })
	for _, stub := range a.allocsOf("more") {
		alloc, _, err := a.client.Allocations().Info(stub.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range alloc.AllocatedResources.Shared.Ports {
			if p.HostIP == "127.0.0.1" {
				t.Fatalf("127.0.0.1:%d handed out although the range there is used up", p.Value)
			}
		}
	}
}
