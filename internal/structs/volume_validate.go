package structs

import (
	"fmt"
	"sort"
	"strings"
)

// Volume types a group's volume block may ask for.
const (
	VolumeTypeHost = "host"
	VolumeTypeCSI  = "csi"
)

// validateVolumes checks a group's volume blocks and its tasks'
// volume_mount blocks as Nomad does for static host volumes. CSI volumes
// pass here; the unsupported table refuses them.
func (tg *TaskGroup) validateVolumes(j *Job, prefix string, v *ValidationError) {
	names := make([]string, 0, len(tg.Volumes))
	for name := range tg.Volumes {
		names = append(names, name)
	}
	sort.Strings(names)
	canaries := tg.Update != nil && tg.Update.Canary != nil && *tg.Update.Canary > 0
	for _, name := range names {
		req := tg.Volumes[name]
		vp := fmt.Sprintf("%s: Volume %q", prefix, name)
		if req == nil {
			v.add("%s: volume block is empty", vp)
			continue
		}
		if req.Source == "" {
			v.add("%s: Source: volume has an empty source", vp)
		}
		switch req.Type {
		case VolumeTypeHost:
			if req.AccessMode != "" {
				v.add("%s: AccessMode: host volumes cannot have an access mode (got %q)", vp, req.AccessMode)
			}
			if req.AttachmentMode != "" {
				v.add("%s: AttachmentMode: host volumes cannot have an attachment mode (got %q)", vp, req.AttachmentMode)
			}
			if req.MountOptions != nil {
				v.add("%s: MountOptions: host volumes cannot have mount options", vp)
			}
			if req.Sticky {
				v.add("%s: Sticky: only CSI and dynamic host volumes can be sticky; static host volumes cannot", vp)
			}
		case VolumeTypeCSI:
		case "":
			v.add("%s: Type: missing volume type (must be %q or %q)", vp, VolumeTypeHost, VolumeTypeCSI)
		default:
			v.add("%s: Type: invalid volume type %q (must be %q or %q)", vp, req.Type, VolumeTypeHost, VolumeTypeCSI)
		}
		if req.PerAlloc {
			if j.Type == JobTypeSystem || j.Type == JobTypeSysBatch {
				v.add("%s: PerAlloc: volume cannot be per_alloc for %s jobs", vp, j.Type)
			}
			if canaries {
				v.add("%s: PerAlloc: volume cannot be per_alloc when canaries are in use", vp)
			}
		}
	}
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		tp := fmt.Sprintf("%s, task %q", prefix, t.Name)
		for i, m := range t.VolumeMounts {
			mp := fmt.Sprintf("%s: VolumeMounts[%d]", tp, i)
			if m == nil {
				v.add("%s: volume_mount block is empty", mp)
				continue
			}
			vol := ptrStr(m.Volume)
			switch {
			case vol == "":
				v.add("%s.Volume: missing volume name", mp)
			case tg.Volumes[vol] == nil:
				v.add("%s.Volume: volume_mount references undefined volume %q (the group declares no volume block of that name)", mp, vol)
			}
			dest := ptrStr(m.Destination)
			if dest == "" {
				v.add("%s.Destination: missing destination", mp)
			} else if strings.ContainsRune(dest, 0) {
				v.add("%s.Destination: destination must not contain a null character", mp)
			}
			if why, ok := noMountDrivers[t.Driver]; ok {
				// Nomad places the task and then fails it in its volume
				// hook; refusing at submit says the same thing sooner.
				v.add("%s: task driver %s does not support host volumes: %s (use exec, java, docker or podman)", mp, t.Driver, why)
			}
			switch p := ptrStr(m.PropagationMode); p {
			case "", "private", "host-to-task", "bidirectional":
			default:
				v.add("%s.PropagationMode: invalid propagation mode %q (must be private, host-to-task or bidirectional)", mp, p)
			}
			switch l := ptrStr(m.SELinuxLabel); l {
			case "", "z", "Z":
			default:
				v.add("%s.SELinuxLabel: invalid SELinux label %q (must be \"z\", \"Z\" or empty)", mp, l)
			}
		}
	}
}

// noMountDrivers are the built-in drivers that cannot mount a volume, and
// why.
var noMountDrivers = map[string]string{
	"raw_exec": "it runs tasks on the host without a mount namespace",
	"qemu":     "a virtual machine sees only its disk image",
}

func ptrStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
