package fsm

import (
	"reflect"

	"github.com/drover-project/drover/internal/structs"
)

// equalGrants reports whether a and b are equal as reflect.DeepEqual
// sees them (nil and empty maps and slices differ). The compactor compares
// every placement's grant with its group's previous ones, and
// reflect.DeepEqual cost ~1.3 µs a placement, a quarter of the compaction:
// grants of only CPU shares, memory and disk (every placement of a group
// without ports, devices, reserved cores or lifecycle hooks) are compared
// field by field; any other is left to reflect.DeepEqual.
// TestEqualGrantsAsDeepEqual fails when the grant types gain a field.
func equalGrants(a, b *structs.AllocatedResources) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || !plainGrant(a) || !plainGrant(b) {
		return reflect.DeepEqual(a, b)
	}
	if a.Shared.DiskMB != b.Shared.DiskMB || len(a.Tasks) != len(b.Tasks) || (a.Tasks == nil) != (b.Tasks == nil) {
		return false
	}
	for name, ta := range a.Tasks {
		tb, ok := b.Tasks[name]
		if !ok || (ta == nil) != (tb == nil) {
			return false
		}
		if ta != nil && (ta.Cpu.CpuShares != tb.Cpu.CpuShares || ta.Memory != tb.Memory) {
			return false
		}
	}
	return true
}

// plainGrant reports whether r has nothing but the fields equalGrants
// compares itself: no lifecycles, shared networks or ports, and no task
// networks, devices or reserved cores (nil, not merely empty).
func plainGrant(r *structs.AllocatedResources) bool {
	if r.TaskLifecycles != nil || r.Shared.Networks != nil || r.Shared.Ports != nil {
		return false
	}
	for _, t := range r.Tasks {
		if t != nil && (t.Cpu.ReservedCores != nil || t.Networks != nil || t.Devices != nil) {
			return false
		}
	}
	return true
}
