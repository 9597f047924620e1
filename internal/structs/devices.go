package structs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DimensionDeviceOversubscribed is the AllocsFit dimension of a node whose
// allocations would hold one device instance twice, or an instance the
// node does not have.
const DimensionDeviceOversubscribed = "device oversubscribed"

// DeviceKey names a device group: vendor/type/name.
func DeviceKey(vendor, typ, name string) string { return vendor + "/" + typ + "/" + name }

// deviceCollision reports the first instance that allocs hold twice or
// that the node does not offer; "" when none. Client-terminal allocations
// hold nothing.
func deviceCollision(node *Node, allocs []*Allocation) string {
	offered := map[string]bool{}
	if node.NodeResources != nil {
		for _, d := range node.NodeResources.Devices {
			if d == nil {
				continue
			}
			key := DeviceKey(d.Vendor, d.Type, d.Name)
			for _, inst := range d.Instances {
				if inst != nil {
					offered[key+"/"+inst.ID] = true
				}
			}
		}
	}
	used := map[string]string{}
	for _, a := range allocs {
		if a == nil || a.ClientTerminalStatus() || a.AllocatedResources == nil {
			continue
		}
		for _, t := range a.AllocatedResources.Tasks {
			if t == nil {
				continue
			}
			for _, d := range t.Devices {
				if d == nil {
					continue
				}
				key := DeviceKey(d.Vendor, d.Type, d.Name)
				for _, id := range d.DeviceIDs {
					inst := key + "/" + id
					if !offered[inst] {
						return fmt.Sprintf("%s: node has no instance %s", key, id)
					}
					if other, dup := used[inst]; dup {
						return fmt.Sprintf("%s: instance %s held by %s and %s", key, id, other, a.ID)
					}
					used[inst] = a.ID
				}
			}
		}
	}
	return ""
}

// writeDevicesClass feeds the device groups into a class hash: what the
// scheduler's device checker reads (names, attributes, healthy count), not
// the instance IDs, which are unique to the node.
func writeDevicesClass(w func(string), devs []*NodeDeviceResource) {
	keys := make([]string, 0, len(devs))
	for _, d := range devs {
		if d == nil {
			continue
		}
		healthy := 0
		for _, inst := range d.Instances {
			if inst != nil && inst.Healthy {
				healthy++
			}
		}
		var b strings.Builder
		b.WriteString(DeviceKey(d.Vendor, d.Type, d.Name))
		b.WriteString("#" + strconv.Itoa(healthy))
		attrs := make([]string, 0, len(d.Attributes))
		for k, v := range d.Attributes {
			if v != nil {
				attrs = append(attrs, k+"="+DeviceAttributeString(v))
			}
		}
		sort.Strings(attrs)
		for _, a := range attrs {
			b.WriteString("\x00" + a)
		}
		keys = append(keys, b.String())
	}
	sort.Strings(keys)
	for _, k := range keys {
		w("device:" + k)
	}
}
