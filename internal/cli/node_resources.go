package cli

import (
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// nodeCapacity is what the node offers to allocations: its resources less
// what it reserves (CPU in MHz, memory and disk in MB), counted as the
// scheduler counts them (structs.Node.Comparable: never negative, never
// wrapped).
func nodeCapacity(n *api.Node) (cpu, memMB, diskMB int64) {
	if r := n.NodeResources; r != nil {
		cpu, memMB, diskMB = counted(r.Cpu.CpuShares), counted(r.Memory.MemoryMB), counted(r.Disk.DiskMB)
	}
	if r := n.ReservedResources; r != nil {
		cpu = max(0, cpu-countedU(r.Cpu.CpuShares))
		memMB = max(0, memMB-countedU(r.Memory.MemoryMB))
		diskMB = max(0, diskMB-countedU(r.Disk.DiskMB))
	}
	return cpu, memMB, diskMB
}

// allocatedOn sums what the node's live allocations hold, as the scheduler
// sums it: each figure clamped, the sums saturating (an absurd stored ask
// shows as a full node, never as a wrapped, nearly empty one).
func allocatedOn(allocs []*api.Allocation) (cpu, memMB, diskMB int64) {
	for _, a := range allocs {
		if a.DesiredStatus != "run" || (a.ClientStatus != "pending" && a.ClientStatus != "running") {
			continue
		}
		r := a.AllocatedResources
		if r == nil {
			continue
		}
		for _, t := range r.Tasks {
			if t == nil {
				continue
			}
			cpu = structs.SatAdd(cpu, counted(t.Cpu.CpuShares))
			memMB = structs.SatAdd(memMB, counted(t.Memory.MemoryMB))
		}
		diskMB = structs.SatAdd(diskMB, counted(r.Shared.DiskMB))
	}
	return cpu, memMB, diskMB
}

var counted, countedU = structs.Counted, structs.CountedU

// mbBytes is a figure in MB in bytes, saturating rather than wrapping.
func mbBytes(mb int64) int64 {
	if mb > math.MaxInt64>>20 {
		return math.MaxInt64
	}
	return mb << 20
}

// formatNodeResources is the node view's resource sections: what the
// allocations hold of the node, the host's own use (when host is known) and,
// when detailed, the host's figures per core and per disk.
func formatNodeResources(n *api.Node, allocs []*api.Allocation, host *api.HostStats, detailed bool) string {
	var b strings.Builder
	capCPU, capMem, capDisk := nodeCapacity(n)
	cpu, mem, disk := allocatedOn(allocs)
	b.WriteString("\n\nAllocated Resources\n")
	b.WriteString(formatList([]string{"CPU|Memory|Disk", fmt.Sprintf("%d/%d MHz|%s/%s|%s/%s", cpu, capCPU,
		humanBytes(mbBytes(mem)), humanBytes(mbBytes(capMem)), humanBytes(mbBytes(disk)), humanBytes(mbBytes(capDisk)))}))
	if host == nil {
		return b.String()
	}
	var used, total, dUsed, dSize uint64
	if m := host.Memory; m != nil {
		used, total = m.Used, m.Total
	}
	if d := host.AllocDirStats; d != nil {
		dUsed, dSize = d.Used, d.Size
	}
	var totalMHz int64
	if r := n.NodeResources; r != nil {
		totalMHz = r.Cpu.CpuShares
	}
	b.WriteString("\n\nHost Resource Utilization\n")
	b.WriteString(formatList([]string{"CPU|Memory|Disk", fmt.Sprintf("%.0f/%d MHz|%s/%s|%s/%s", host.CPUTicksConsumed, totalMHz,
		humanBytes(int64(used)), humanBytes(int64(total)), humanBytes(int64(dUsed)), humanBytes(int64(dSize)))}))
	if !detailed {
		return b.String()
	}
	rows := []string{"CPU|User|System|Idle"}
	for _, c := range host.CPU {
		rows = append(rows, fmt.Sprintf("%s|%.2f%%|%.2f%%|%.2f%%", c.CPU, c.User, c.System, c.Idle))
	}
	b.WriteString("\n\nCPU Stats\n")
	b.WriteString(formatList(rows))
	if m := host.Memory; m != nil {
		b.WriteString("\n\nMemory Stats\n")
		b.WriteString(formatKV([]string{"Total|" + humanBytes(int64(m.Total)), "Available|" + humanBytes(int64(m.Available)),
			"Used|" + humanBytes(int64(m.Used)), "Free|" + humanBytes(int64(m.Free))}))
	}
	rows = []string{"Device|Mountpoint|Size|Used|Available|Used %|Inodes %"}
	for _, d := range host.DiskStats {
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%s|%.2f%%|%.2f%%", d.Device, d.Mountpoint, humanBytes(int64(d.Size)),
			humanBytes(int64(d.Used)), humanBytes(int64(d.Available)), d.UsedPercent, d.InodesUsedPercent))
	}
	b.WriteString("\n\nDisk Stats\n")
	b.WriteString(formatList(rows))
	return b.String()
}
