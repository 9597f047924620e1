package cli

import (
	"math"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// A node holding an int64-max memory ask (stored before validation refused
// it) shows as full in `node status`, not wrapped to a few MiB allocated.
func TestNodeResourcesNeverWrap(t *testing.T) {
	node := &api.Node{NodeResources: &api.NodeResources{
		Cpu: api.NodeCpuResources{CpuShares: 4000}, Memory: api.NodeMemoryResources{MemoryMB: 24064},
		Disk: api.NodeDiskResources{DiskMB: 100000}}}
	alloc := func(mem int64) *api.Allocation {
		return &api.Allocation{DesiredStatus: "run", ClientStatus: "running", AllocatedResources: &api.AllocatedResources{
			Tasks: map[string]*api.AllocatedTaskResources{"t": {Cpu: api.AllocatedCpuResources{CpuShares: 100},
				Memory: api.AllocatedMemoryResources{MemoryMB: mem}}}}}
	}
	allocs := []*api.Allocation{alloc(143), alloc(math.MaxInt64), alloc(math.MaxInt64)}
	_, mem, _ := allocatedOn(allocs)
	if mem < 24064 {
		t.Fatalf("allocated memory %d MB: the sum wrapped", mem)
	}
	out := formatNodeResources(node, allocs, nil, false)
	if !strings.Contains(out, "8.0 EiB/23.5 GiB") {
		t.Fatalf("node resources:\n%s", out)
	}
}
