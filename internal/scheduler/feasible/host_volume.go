package feasible

import (
	"fmt"
	"sort"

	"github.com/drover-project/drover/internal/structs"
)

// FilterHostVolumes is the metrics reason of a node that lacks a host
// volume the group asks for, or offers it read-only to a read-write
// request (Nomad's wording).
const FilterHostVolumes = "missing compatible host volumes"

// hostVolumeAsk is one group volume of type host.
type hostVolumeAsk struct {
	source   string
	readOnly bool
	perAlloc bool
}

// groupHostVolumes lists the group's host volume requests in name order.
func groupHostVolumes(tg *structs.TaskGroup) []hostVolumeAsk {
	names := make([]string, 0, len(tg.Volumes))
	for name, v := range tg.Volumes {
		if v != nil && v.Type == structs.VolumeTypeHost {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make([]hostVolumeAsk, 0, len(names))
	for _, name := range names {
		v := tg.Volumes[name]
		out = append(out, hostVolumeAsk{source: v.Source, readOnly: v.ReadOnly, perAlloc: v.PerAlloc})
	}
	return out
}

// HostVolumeSource is the node's host volume name a request resolves to
// for the allocation named allocName: per_alloc volumes take the
// allocation's index as a suffix ("data[2]").
func HostVolumeSource(v *structs.VolumeRequest, allocName string) string {
	if v == nil {
		return ""
	}
	if !v.PerAlloc {
		return v.Source
	}
	return fmt.Sprintf("%s[%d]", v.Source, structs.AllocIndexFromName(allocName))
}

// hostVolumeChecker checks that the node offers every host volume the
// group asks for, writable when the request is. It depends on the
// allocation being placed (per_alloc), so it never runs through the
// class memo.
type hostVolumeChecker struct {
	asks      []hostVolumeAsk
	allocName string
}

func (c *hostVolumeChecker) Feasible(n *structs.Node) (bool, string) {
	for _, a := range c.asks {
		src := a.source
		if a.perAlloc {
			src = fmt.Sprintf("%s[%d]", a.source, structs.AllocIndexFromName(c.allocName))
		}
		hv := n.HostVolumes[src]
		if hv == nil || (hv.ReadOnly && !a.readOnly) {
			return false, FilterHostVolumes
		}
	}
	return true, ""
}
