package feasible

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/structs"
)

// Constraint operands handled outside checkConstraint.
const (
	OpDistinctHosts    = "distinct_hosts"
	OpDistinctProperty = "distinct_property"
)

// ConstraintString renders a constraint as users see it in metrics.
func ConstraintString(c *structs.Constraint) string {
	return fmt.Sprintf("%s %s %s", c.LTarget, c.Operand, c.RTarget)
}

// escapesClass reports whether the constraint reads a property that is not
// part of the computed class, so its result cannot be memoised per class.
func escapesClass(c *structs.Constraint) bool {
	if c.Operand == OpDistinctHosts || c.Operand == OpDistinctProperty {
		// They pass the class-level checks; their own iterators, which
		// run after the memo, enforce them.
		return false
	}
	for _, t := range []string{c.LTarget, c.RTarget} {
		if strings.Contains(t, "${node.unique.") || strings.Contains(t, "${attr.unique.") ||
			strings.Contains(t, "${meta.unique.") {
			return true
		}
	}
	return false
}

// resolveTarget interpolates ${...} against the node; anything else is a
// literal. ok is false when the node lacks the property.
func resolveTarget(target string, n *structs.Node) (string, bool) {
	if !strings.HasPrefix(target, "${") || !strings.HasSuffix(target, "}") {
		return target, true
	}
	key := target[2 : len(target)-1]
	switch key {
	case "node.unique.id":
		return n.ID, true
	case "node.datacenter":
		return n.Datacenter, true
	case "node.unique.name":
		return n.Name, true
	case "node.class":
		return n.NodeClass, true
	case "node.pool":
		if n.NodePool == "" {
			return structs.DefaultNodePool, true
		}
		return n.NodePool, true
	}
	if attr, ok := strings.CutPrefix(key, "attr."); ok {
		v, found := n.Attributes[attr]
		return v, found
	}
	if meta, ok := strings.CutPrefix(key, "meta."); ok {
		v, found := n.Meta[meta]
		return v, found
	}
	return "", false
}

// meetsConstraint evaluates one constraint against a node.
func (c *Context) meetsConstraint(con *structs.Constraint, n *structs.Node) bool {
	switch con.Operand {
	case OpDistinctHosts, OpDistinctProperty:
		// Enforced by DistinctHostsIterator and DistinctPropertyIterator,
		// which count allocations and so cannot be memoised per class.
		return true
	}
	l, lok := resolveTarget(con.LTarget, n)
	r, rok := resolveTarget(con.RTarget, n)
	return c.checkOperand(con.Operand, l, r, lok, rok)
}

func (c *Context) checkOperand(op, l, r string, lok, rok bool) bool {
	switch op {
	case "", "=", "==", "is":
		return lok && rok && l == r
	case "!=", "not":
		if !lok && !rok {
			return false
		}
		return lok != rok || l != r
	case "<", "<=", ">", ">=":
		return lok && rok && compareOrdered(op, l, r)
	case "is_set":
		return lok
	case "is_not_set":
		return !lok
	case "regexp":
		if !lok || !rok {
			return false
		}
		re, err := c.regexp(r)
		return err == nil && re.MatchString(l)
	case "version", "semver":
		return lok && rok && versionMatches(l, r, op == "semver")
	case "set_contains", "set_contains_all":
		return lok && rok && setContains(l, r, true)
	case "set_contains_any":
		return lok && rok && setContains(l, r, false)
	}
	return false
}

// compareOrdered compares numerically when both sides parse, else lexically.
func compareOrdered(op, l, r string) bool {
	var cmp int
	lf, lerr := strconv.ParseFloat(l, 64)
	rf, rerr := strconv.ParseFloat(r, 64)
	if lerr == nil && rerr == nil {
		switch {
		case lf < rf:
			cmp = -1
		case lf > rf:
			cmp = 1
		}
	} else {
		cmp = strings.Compare(l, r)
	}
	switch op {
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	default:
		return cmp >= 0
	}
}

func splitSet(s string) map[string]struct{} {
	out := make(map[string]struct{})
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out[p] = struct{}{}
		}
	}
	return out
}

func setContains(have, want string, all bool) bool {
	h := splitSet(have)
	w := splitSet(want)
	if len(w) == 0 {
		return all
	}
	for v := range w {
		_, ok := h[v]
		if ok && !all {
			return true
		}
		if !ok && all {
			return false
		}
	}
	return all
}

// version is a parsed dotted version with an optional pre-release.
type version struct {
	segs []int64
	pre  string
}

func parseVersion(s string) (version, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i] // build metadata never affects ordering
	}
	var v version
	if i := strings.IndexByte(s, '-'); i >= 0 {
		v.pre = s[i+1:]
		s = s[:i]
	}
	if s == "" {
		return v, false
	}
	for _, p := range strings.Split(s, ".") {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 {
			return v, false
		}
		v.segs = append(v.segs, n)
	}
	return v, true
}

func (v version) compare(o version) int {
	n := max(len(v.segs), len(o.segs), 3)
	for i := 0; i < n; i++ {
		var a, b int64
		if i < len(v.segs) {
			a = v.segs[i]
		}
		if i < len(o.segs) {
			b = o.segs[i]
		}
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	switch {
	case v.pre == o.pre:
		return 0
	case v.pre == "":
		return 1
	case o.pre == "":
		return -1
	}
	return strings.Compare(v.pre, o.pre)
}

// versionMatches checks a comma-separated constraint list such as
// ">= 1.2, < 2.0" or "~> 1.4". With strict (semver) a pre-release version
// only matches constraints that themselves name a pre-release.
func versionMatches(have, constraint string, strict bool) bool {
	v, ok := parseVersion(have)
	if !ok {
		return false
	}
	for _, part := range strings.Split(constraint, ",") {
		part = strings.TrimSpace(part)
		op := "="
		for _, cand := range []string{">=", "<=", "!=", "~>", "=", ">", "<"} {
			if strings.HasPrefix(part, cand) {
				op, part = cand, strings.TrimSpace(part[len(cand):])
				break
			}
		}
		want, ok := parseVersion(part)
		if !ok {
			return false
		}
		if strict && v.pre != "" && want.pre == "" {
			return false
		}
		cmp := v.compare(want)
		switch op {
		case "=":
			ok = cmp == 0
		case "!=":
			ok = cmp != 0
		case ">":
			ok = cmp > 0
		case ">=":
			ok = cmp >= 0
		case "<":
			ok = cmp < 0
		case "<=":
			ok = cmp <= 0
		case "~>":
			// Pessimistic: >= want, and same prefix up to the last given segment.
			ok = cmp >= 0
			prefix := len(want.segs) - 1
			if prefix < 1 {
				prefix = 1
			}
			for i := 0; ok && i < prefix && i < len(want.segs); i++ {
				var have int64
				if i < len(v.segs) {
					have = v.segs[i]
				}
				ok = have == want.segs[i]
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
