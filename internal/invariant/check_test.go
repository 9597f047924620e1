package invariant

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

func node(id string) *structs.Node {
	return &structs.Node{ID: id, Status: structs.NodeStatusReady,
		NodeResources: &structs.NodeResources{
			Cpu: structs.NodeCpuResources{CpuShares: 1000}, Memory: structs.NodeMemoryResources{MemoryMB: 1000},
			Disk:         structs.NodeDiskResources{DiskMB: 1000},
			NodeNetworks: []*structs.NodeNetworkResource{{Mode: "host", Addresses: []structs.NodeNetworkAddress{{Alias: "default", Address: "10.0.0.1"}}}},
			Devices: []*structs.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "t4",
				Instances: []*api.NodeDevice{{ID: "gpu-0", Healthy: true}, {ID: "gpu-1", Healthy: true}}}},
			MinDynamicPort: 30000, MaxDynamicPort: 30009,
		},
		ReservedResources: &structs.NodeReservedResources{Cpu: structs.NodeReservedCpuResources{CpuShares: 100},
			Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "22"}},
	}
}

func job(id string, count int) *structs.Job {
	return &structs.Job{ID: id, Namespace: "default", Type: structs.JobTypeService,
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: count, Networks: []*structs.NetworkResource{{
			ReservedPorts: []structs.Port{{Label: "admin", Value: 8080}},
			DynamicPorts:  []structs.Port{{Label: "http"}},
		}}}}}
}

func alloc(id, nodeID, name string, cpu int64, ports ...structs.AllocatedPortMapping) *structs.Allocation {
	return &structs.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "g", Name: "web.g[" + name + "]", NodeID: nodeID,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		AllocatedResources: &structs.AllocatedResources{
			Tasks:  map[string]*structs.AllocatedTaskResources{"t": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Memory: structs.AllocatedMemoryResources{MemoryMB: 100}}},
			Shared: structs.AllocatedSharedResources{DiskMB: 100, Ports: ports},
		}}
}

func port(label string, v int) structs.AllocatedPortMapping {
	return structs.AllocatedPortMapping{Label: label, Value: v, HostIP: "10.0.0.1"}
}

func gpu(a *structs.Allocation, ids ...string) *structs.Allocation {
	a.AllocatedResources.Tasks["t"].Devices = []*structs.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "t4", DeviceIDs: ids}}
	return a
}

func TestCheck(t *testing.T) {
	complete := &structs.Evaluation{ID: "e1", JobID: "web", Namespace: "default", Status: structs.EvalStatusComplete}
	cases := []struct {
		name  string
		state func() State
		want  []string // one substring per expected violation, in order
	}{
		{"sound", func() State {
			return State{Nodes: []*structs.Node{node("n1"), node("n2")}, Jobs: []*structs.Job{job("web", 3)}, Evals: []*structs.Evaluation{complete},
				Allocs: []*structs.Allocation{
					gpu(alloc("a1", "n1", "0", 450, port("admin", 8080), port("http", 30000)), "gpu-0"),
					gpu(alloc("a2", "n1", "1", 450, port("http", 30001)), "gpu-1"),
					gpu(alloc("a3", "n2", "2", 900, port("admin", 8080), port("http", 30000)), "gpu-0", "gpu-1"),
				}}
		}, nil},
		{"cpu overcommitted after reservations", func() State {
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 2)},
				Allocs: []*structs.Allocation{alloc("a1", "n1", "0", 500), alloc("a2", "n1", "1", 401)}}
		}, []string{"overcommit: cpu: 2 allocations use 901, node offers 900"}},
		{"terminal allocs do not count", func() State {
			stopped := alloc("a2", "n1", "1", 900, port("http", 30000))
			stopped.DesiredStatus = structs.AllocDesiredStatusStop
			done := alloc("a3", "n1", "1", 900, port("http", 30000))
			done.ClientStatus = structs.AllocClientStatusComplete
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 1)},
				Allocs: []*structs.Allocation{alloc("a1", "n1", "0", 900, port("http", 30000)), stopped, done}}
		}, nil},
		{"port used twice", func() State {
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 2)},
				Allocs: []*structs.Allocation{alloc("a1", "n1", "0", 1, port("http", 30003)), alloc("a2", "n1", "1", 1, port("http", 30003))}}
		}, []string{"port: 10.0.0.1:30003 used 2 times [node n1] [allocs a1, a2]"}},
		{"same port on another node is fine", func() State {
			return State{Nodes: []*structs.Node{node("n1"), node("n2")}, Jobs: []*structs.Job{job("web", 2)},
				Allocs: []*structs.Allocation{alloc("a1", "n1", "0", 1, port("http", 30003)), alloc("a2", "n2", "1", 1, port("http", 30003))}}
		}, nil},
		{"dynamic port outside the node's range", func() State {
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 1)},
				Allocs: []*structs.Allocation{alloc("a1", "n1", "0", 1, port("http", 30010))}}
		}, []string{`port: dynamic port 10.0.0.1:30010 (label "http") outside the node's range 30000-30009`}},
		{"port the node reserves", func() State {
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 1)},
				Allocs: []*structs.Allocation{alloc("a1", "n1", "0", 1, port("ssh", 22))}}
		}, []string{"port: port reserved by the node: 10.0.0.1:22"}},
		{"port on a foreign address", func() State {
			p := port("admin", 8080)
			p.HostIP = "10.9.9.9"
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 1)},
				Allocs: []*structs.Allocation{alloc("a1", "n1", "0", 1, p)}}
		}, []string{"port: port on an address the node does not have: 10.9.9.9:8080"}},
		{"device instance granted twice", func() State {
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 2)},
				Allocs: []*structs.Allocation{gpu(alloc("a1", "n1", "0", 1), "gpu-0"), gpu(alloc("a2", "n1", "1", 1), "gpu-1", "gpu-0")}}
		}, []string{"device: device nvidia/gpu/t4 instance gpu-0 granted 2 times"}},
		{"device instance the node lacks", func() State {
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 1)},
				Allocs: []*structs.Allocation{gpu(alloc("a1", "n1", "0", 1), "gpu-7")}}
		}, []string{"device: task \"t\" holds device nvidia/gpu/t4 instance gpu-7, which the node does not have"}},
		{"two live allocs with one name", func() State {
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 2)},
				Allocs: []*structs.Allocation{alloc("a1", "n1", "0", 1), alloc("a2", "n1", "0", 1)}}
		}, []string{"alloc: 2 live allocations named web.g[0] [job web] [allocs a1, a2]"}},
		{"alloc on an unknown node", func() State {
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 1)},
				Allocs: []*structs.Allocation{alloc("a1", "gone", "0", 1)}}
		}, []string{"alloc: live allocation web.g[0] on a node the state does not know [node gone]"}},
		{"allocation lost", func() State {
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 3)}, Evals: []*structs.Evaluation{complete},
				Allocs: []*structs.Allocation{alloc("a1", "n1", "0", 1)}}
		}, []string{`alloc: group "g" has 1 of 3 allocations and no open evaluation`}},
		{"shortfall with a blocked eval is accounted for", func() State {
			blocked := &structs.Evaluation{ID: "e2", JobID: "web", Namespace: "default", Status: structs.EvalStatusBlocked,
				FailedTGAllocs: map[string]*structs.AllocMetric{"g": {}}}
			return State{Nodes: []*structs.Node{node("n1")}, Jobs: []*structs.Job{job("web", 3)}, Evals: []*structs.Evaluation{complete, blocked},
				Allocs: []*structs.Allocation{alloc("a1", "n1", "0", 1)}}
		}, nil},
		{"pending eval", func() State {
			return State{Jobs: []*structs.Job{job("web", 0)}, Evals: []*structs.Evaluation{{ID: "e3", JobID: "web", Status: structs.EvalStatusPending, TriggeredBy: "job-register"}}}
		}, []string{`eval: evaluation is "pending", not terminal (triggered by job-register) [job web] [eval e3]`}},
		{"blocked eval without a reason", func() State {
			return State{Jobs: []*structs.Job{job("web", 0)}, Evals: []*structs.Evaluation{{ID: "e4", JobID: "web", Status: structs.EvalStatusBlocked}}}
		}, []string{"eval: blocked evaluation gives no reason"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.state())
			if len(got) != len(tc.want) {
				t.Fatalf("got %d violations, want %d:\n%s", len(got), len(tc.want), Summary(got, 0))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].String(), w) {
					t.Errorf("violation %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestSummaryLimits(t *testing.T) {
	vs := []Violation{{Kind: KindEval, Detail: "a"}, {Kind: KindEval, Detail: "b"}, {Kind: KindEval, Detail: "c"}}
	if got, want := Summary(vs, 2), "eval: a\neval: b\n... and 1 more\n"; got != want {
		t.Fatalf("Summary = %q, want %q", got, want)
	}
}
