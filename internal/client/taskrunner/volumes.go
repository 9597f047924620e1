package taskrunner

import (
	"fmt"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// HostVolumeMounts resolves a task's volume_mount blocks against its
// group's volume requests and the node's host volumes: each becomes a bind
// of the host volume's path, read-only when the node's volume, the group's
// request or the mount asks for it. per_alloc volumes take the
// allocation's index as a suffix of their source. A volume missing from
// the node (its configuration changed after placement) is an error naming
// it.
func HostVolumeMounts(alloc *structs.Allocation, task *structs.Task, node *structs.Node) ([]drivers.MountConfig, error) {
	if task == nil || len(task.VolumeMounts) == 0 {
		return nil, nil
	}
	var tg *structs.TaskGroup
	if alloc != nil && alloc.Job != nil {
		tg = alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	}
	var out []drivers.MountConfig
	for _, m := range task.VolumeMounts {
		if m == nil || m.Volume == nil {
			continue
		}
		var req *structs.VolumeRequest
		if tg != nil {
			req = tg.Volumes[*m.Volume]
		}
		if req == nil {
			return nil, fmt.Errorf("volume_mount %q: the group has no volume of that name", *m.Volume)
		}
		if req.Type != structs.VolumeTypeHost {
			return nil, fmt.Errorf("volume_mount %q: volumes of type %q are not supported", *m.Volume, req.Type)
		}
		source := req.Source
		if req.PerAlloc {
			source = fmt.Sprintf("%s[%d]", req.Source, alloc.Index())
		}
		var hv *structs.HostVolumeInfo
		if node != nil {
			hv = node.HostVolumes[source]
		}
		if hv == nil {
			return nil, fmt.Errorf("volume_mount %q: no host volume named %q on this node", *m.Volume, source)
		}
		mc := drivers.MountConfig{
			HostPath: hv.Path,
			ReadOnly: hv.ReadOnly || req.ReadOnly || (m.ReadOnly != nil && *m.ReadOnly),
		}
		if m.Destination != nil {
			mc.TaskPath = *m.Destination
		}
		if m.PropagationMode != nil {
			mc.PropagationMode = *m.PropagationMode
		}
		if m.SELinuxLabel != nil {
			mc.SELinuxLabel = *m.SELinuxLabel
		}
		out = append(out, mc)
	}
	return out, nil
}
