package integration

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// A dev agent with the fake device plugin reports four GPUs on its node; a
// batch job asking one (with a unit-aware attribute constraint) runs, and
// its task sees the granted instance in FAKE_VISIBLE_DEVICES. A job asking
// more than the node has stays blocked, saying devices are missing.
func TestFakeDeviceEndToEnd(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, map[string]any{
		"plugin": map[string]any{"fake_device": map[string]any{"config": map[string]any{
			"vendor": "drover", "type": "gpu", "name": "fake-1", "count": 4,
			"attributes": map[string]any{"memory": "8 GiB"},
		}}},
	})
	a.waitReady(true)

	nodes, _, err := a.client.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	node, _, err := a.client.Nodes().Info(nodes[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := node.NodeResources.Devices; len(d) != 1 || d[0].ID() != "drover/gpu/fake-1" || len(d[0].Instances) != 4 {
		t.Fatalf("node devices = %+v", d)
	}

	job := rawExecJob("gpu", "batch", 1, `echo "devices=$FAKE_VISIBLE_DEVICES"`)
	job.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{
		Name: "drover/gpu", Count: ptr(uint64(1)),
		Constraints: []*api.Constraint{{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "4096 MiB"}},
	}}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var alloc *api.Allocation
	waitFor(t, 20*time.Second, "gpu alloc complete", func() bool {
		stubs := a.allocsOf("gpu")
		if len(stubs) != 1 {
			return false
		}
		if stubs[0].ClientStatus == "failed" {
			t.Fatalf("alloc failed: %+v", stubs[0].TaskStates)
		}
		alloc, _, err = a.client.Allocations().Info(stubs[0].ID, nil)
		return err == nil && stubs[0].ClientStatus == "complete"
	})
	devs := alloc.AllocatedResources.Tasks["t"].Devices
	if len(devs) != 1 || len(devs[0].DeviceIDs) != 1 {
		t.Fatalf("allocated devices = %+v", devs)
	}
	r, err := a.client.AllocFS().Cat(alloc, "alloc/logs/t.stdout.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	if got, want := strings.TrimSpace(string(b)), "devices="+devs[0].DeviceIDs[0]; got != want {
		t.Fatalf("task printed %q, want %q", got, want)
	}

	big := rawExecJob("big", "batch", 1, "true")
	big.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "gpu", Count: ptr(uint64(5))}}
	resp, _, err := a.client.Jobs().Register(big, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "eval with failed placement", func() bool {
		ev, _, err := a.client.Evaluations().Info(resp.EvalID, nil)
		if err != nil || ev.Status != "complete" {
			return false
		}
		m := ev.FailedTGAllocs["g"]
		return m != nil && m.ConstraintFiltered["missing devices"] == 1
	})
}
