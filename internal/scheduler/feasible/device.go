package feasible

import (
	"fmt"
	"math"
	"strings"

	"github.com/drover-project/drover/internal/structs"
)

// Device asks: a task's `device "vendor/type/name" { count, constraint,
// affinity }`. The checker (class level, memoised) asks whether the node
// has enough healthy matching instances at all; the allocator (in the
// bin-packer, per node and placement) picks instances no proposed
// allocation holds.

// deviceCount is the number of instances an ask wants (default 1). A
// count beyond any node (validation refuses it; stored data may hold it)
// stays huge, never converts to a negative int that every node satisfies.
func deviceCount(ask *structs.RequestedDevice) int {
	if ask.Count == nil {
		return 1
	}
	return int(min(*ask.Count, math.MaxInt32))
}

// deviceNameMatches reports whether group d answers the ask's name:
// "type", "vendor/type" or "vendor/type/name".
func deviceNameMatches(name string, d *structs.NodeDeviceResource) bool {
	parts := strings.Split(name, "/")
	switch len(parts) {
	case 1:
		return parts[0] == d.Type
	case 2:
		return parts[0] == d.Vendor && parts[1] == d.Type
	case 3:
		return parts[0] == d.Vendor && parts[1] == d.Type && parts[2] == d.Name
	}
	return false
}

// deviceTarget resolves ${device.vendor|type|model|attr.<k>} against the
// group; anything else is a literal (parsed for units: "8 GiB").
func deviceTarget(target string, d *structs.NodeDeviceResource) (*structs.Attribute, bool) {
	if !strings.HasPrefix(target, "${") || !strings.HasSuffix(target, "}") {
		return structs.ParseDeviceAttribute(target), true
	}
	str := func(s string) *structs.Attribute { return &structs.Attribute{StringVal: &s} }
	switch key := target[2 : len(target)-1]; key {
	case "device.vendor":
		return str(d.Vendor), true
	case "device.type":
		return str(d.Type), true
	case "device.model":
		return str(d.Name), true
	default:
		if attr, ok := strings.CutPrefix(key, "device.attr."); ok {
			a, found := d.Attributes[attr]
			return a, found && a != nil
		}
	}
	return nil, false
}

// meetsDeviceCheck evaluates a constraint or affinity on a device group.
// Numbers compare numerically after unit conversion ("8 GiB" > "4096
// MiB"); numbers of different dimensions or strings use the node
// operators (lexical ordering, regexp, sets, versions).
func (c *Context) meetsDeviceCheck(op, ltarget, rtarget string, d *structs.NodeDeviceResource) bool {
	l, lok := deviceTarget(ltarget, d)
	r, rok := deviceTarget(rtarget, d)
	if lok && rok {
		lv, ldim, lnum := structs.DeviceAttributeNumber(l)
		rv, rdim, rnum := structs.DeviceAttributeNumber(r)
		if lnum && rnum && ldim == rdim {
			switch op {
			case "", "=", "==", "is":
				return lv == rv
			case "!=", "not":
				return lv != rv
			case "<":
				return lv < rv
			case "<=":
				return lv <= rv
			case ">":
				return lv > rv
			case ">=":
				return lv >= rv
			}
		} else if lnum && rnum {
			// 8 GiB is not comparable with 2 GHz.
			switch op {
			case "<", "<=", ">", ">=":
				return false
			}
		}
	}
	return c.checkOperand(op, structs.DeviceAttributeString(l), structs.DeviceAttributeString(r), lok, rok)
}

// deviceGroupFeasible reports whether group d matches the ask's name and
// every constraint.
func (c *Context) deviceGroupFeasible(ask *structs.RequestedDevice, d *structs.NodeDeviceResource) bool {
	if d == nil || !deviceNameMatches(ask.Name, d) {
		return false
	}
	for _, con := range ask.Constraints {
		if con != nil && !c.meetsDeviceCheck(con.Operand, con.LTarget, con.RTarget, d) {
			return false
		}
	}
	return true
}

func healthyInstances(d *structs.NodeDeviceResource) int {
	n := 0
	for _, inst := range d.Instances {
		if inst != nil && inst.Healthy {
			n++
		}
	}
	return n
}

// groupDeviceAsks lists the device asks of every task of the group.
func groupDeviceAsks(tg *structs.TaskGroup) []*structs.RequestedDevice {
	var out []*structs.RequestedDevice
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			out = append(out, t.Resources.Devices...)
		}
	}
	return out
}

// deviceChecker filters nodes that could never satisfy the group's device
// asks, even empty: too few healthy instances matching name and
// constraints. It reads only what the computed class hashes (names,
// attributes, healthy counts), so its outcome is memoised per class.
type deviceChecker struct {
	ctx  *Context
	asks []*structs.RequestedDevice
}

func (dc *deviceChecker) Feasible(n *structs.Node) (bool, string) {
	if len(dc.asks) == 0 {
		return true, ""
	}
	if n.NodeResources == nil || len(n.NodeResources.Devices) == 0 {
		return false, "missing devices"
	}
	left := make(map[*structs.NodeDeviceResource]int, len(n.NodeResources.Devices))
	for _, d := range n.NodeResources.Devices {
		if d != nil {
			left[d] = healthyInstances(d)
		}
	}
	for _, ask := range dc.asks {
		want, found := deviceCount(ask), false
		for _, d := range n.NodeResources.Devices {
			if left[d] >= want && dc.ctx.deviceGroupFeasible(ask, d) {
				left[d] -= want
				found = true
				break
			}
		}
		if !found {
			return false, "missing devices"
		}
	}
	return true, ""
}

// deviceAllocator hands out device instances on one node: it starts from
// the instances the proposed allocations hold and never gives one twice.
type deviceAllocator struct {
	ctx  *Context
	node *structs.Node
	used map[string]bool // vendor/type/name/id
	// score sums the weights of matched device affinities; abs the
	// absolute weights of all device affinities seen.
	score, abs float64
}

func newDeviceAllocator(ctx *Context, n *structs.Node, proposed []*structs.Allocation) *deviceAllocator {
	da := &deviceAllocator{ctx: ctx, node: n, used: map[string]bool{}}
	for _, a := range proposed {
		if a == nil || a.ClientTerminalStatus() || a.AllocatedResources == nil {
			continue
		}
		for _, t := range a.AllocatedResources.Tasks {
			if t == nil {
				continue
			}
			for _, d := range t.Devices {
				key := structs.DeviceKey(d.Vendor, d.Type, d.Name)
				for _, id := range d.DeviceIDs {
					da.used[key+"/"+id] = true
				}
			}
		}
	}
	return da
}

// free lists the healthy instances of d that nobody holds.
func (da *deviceAllocator) free(d *structs.NodeDeviceResource) []string {
	key := structs.DeviceKey(d.Vendor, d.Type, d.Name)
	var out []string
	for _, inst := range d.Instances {
		if inst != nil && inst.Healthy && !da.used[key+"/"+inst.ID] {
			out = append(out, inst.ID)
		}
	}
	return out
}

// affinity is the summed weight of the ask's affinities that d matches.
func (da *deviceAllocator) affinity(ask *structs.RequestedDevice, d *structs.NodeDeviceResource) float64 {
	total := 0.0
	for _, af := range ask.Affinities {
		if af != nil && da.ctx.meetsDeviceCheck(af.Operand, af.LTarget, af.RTarget, d) {
			total += weightOf(af.Weight)
		}
	}
	return total
}

// assign picks instances for one ask: among the matching groups with
// enough free instances, the one whose affinities weigh most (the first
// on a tie). It returns the grant or the DimensionExhausted key.
func (da *deviceAllocator) assign(ask *structs.RequestedDevice) (*structs.AllocatedDeviceResource, string) {
	if da.node.NodeResources == nil {
		return nil, "devices: no devices on node"
	}
	want := deviceCount(ask)
	var (
		best     *structs.NodeDeviceResource
		bestFree []string
		bestAff  = math.Inf(-1)
	)
	for _, d := range da.node.NodeResources.Devices {
		if !da.ctx.deviceGroupFeasible(ask, d) {
			continue
		}
		free := da.free(d)
		if len(free) < want {
			continue
		}
		if aff := da.affinity(ask, d); aff > bestAff {
			best, bestFree, bestAff = d, free, aff
		}
	}
	if best == nil {
		return nil, fmt.Sprintf("devices: no %d unused instance(s) of %q", want, ask.Name)
	}
	for _, af := range ask.Affinities {
		if af != nil {
			da.abs += math.Abs(weightOf(af.Weight))
		}
	}
	da.score += bestAff
	ids := append([]string(nil), bestFree[:want]...)
	key := structs.DeviceKey(best.Vendor, best.Type, best.Name)
	for _, id := range ids {
		da.used[key+"/"+id] = true
	}
	return &structs.AllocatedDeviceResource{Vendor: best.Vendor, Type: best.Type, Name: best.Name, DeviceIDs: ids}, ""
}

// affinityScore is the device-affinity score in [-1, 1], 0 without any.
func (da *deviceAllocator) affinityScore() float64 {
	if da.abs == 0 {
		return 0
	}
	return da.score / da.abs
}
