package feasible

import "github.com/drover-project/drover/internal/structs"

// Checker is one feasibility check. The FeasibilityIterator runs job and
// group checkers once per computed node class (unless a constraint reads
// unique node properties) and reuses the outcome for every other node of
// the class.
type Checker interface {
	// Feasible reports whether n passes; reason names the failed check.
	Feasible(n *structs.Node) (ok bool, reason string)
}

// constraintChecker checks a list of constraints (distinct_hosts and
// distinct_property pass here: their iterators enforce them).
type constraintChecker struct {
	ctx  *Context
	cons []*structs.Constraint
}

func (c *constraintChecker) Feasible(n *structs.Node) (bool, string) {
	for _, con := range c.cons {
		if !c.ctx.meetsConstraint(con, n) {
			return false, ConstraintString(con)
		}
	}
	return true, ""
}

// driverChecker checks that the node runs every driver of the group.
type driverChecker struct{ drivers []string }

func (d *driverChecker) Feasible(n *structs.Node) (bool, string) {
	for _, name := range d.drivers {
		if !hasDriver(n, name) {
			return false, "missing drivers"
		}
	}
	return true, ""
}

// BridgeAttribute is the node attribute of a node that runs groups in
// network mode "bridge" (the client fingerprints it).
const BridgeAttribute = "plugins.cni.version.bridge"

// networkChecker checks that the node offers the group's network mode.
type networkChecker struct{ bridge bool }

func (c *networkChecker) Feasible(n *structs.Node) (bool, string) {
	if c.bridge && n.Attributes[BridgeAttribute] == "" {
		return false, "missing network: bridge mode unavailable"
	}
	return true, ""
}

func groupNeedsBridge(tg *structs.TaskGroup) bool {
	for _, nw := range tg.Networks {
		if nw != nil && nw.Mode == "bridge" {
			return true
		}
	}
	return false
}
