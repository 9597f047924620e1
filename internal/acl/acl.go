package acl

import (
	"slices"
	"sort"
	"strings"
)

// ACL is a compiled set of policies. It is immutable once built and safe
// for concurrent use. A nil *ACL allows nothing.
type ACL struct {
	management bool

	namespaces     map[string]capSet
	wildNamespaces []globCaps
	nodePools      map[string]capSet
	wildNodePools  []globCaps
	hostVolumes    map[string]capSet
	wildHostVols   []globCaps

	// variables holds each namespace block's variable path rules
	// (namespace name or glob -> path glob -> capabilities).
	variables map[string]map[string]capSet

	agent, node, operator, quota, plugin string
}

type capSet map[string]struct{}

type globCaps struct {
	pattern string
	caps    capSet
}

// ManagementACL allows everything.
var ManagementACL = &ACL{management: true}

// NewACL compiles policies into one ACL. Capabilities of blocks naming the
// same namespace (or pool, volume) in several policies add up; "deny" in
// any of them wins. For the simple blocks the strongest level wins, except
// that a deny anywhere denies.
func NewACL(management bool, policies []*Policy) *ACL {
	if management {
		return ManagementACL
	}
	a := &ACL{
		namespaces:  map[string]capSet{},
		nodePools:   map[string]capSet{},
		hostVolumes: map[string]capSet{},
		variables:   map[string]map[string]capSet{},
	}
	add := func(m map[string]capSet, name string, caps []string) {
		cs := m[name]
		if cs == nil {
			cs = capSet{}
			m[name] = cs
		}
		for _, c := range caps {
			cs[c] = struct{}{}
		}
	}
	for _, p := range policies {
		if p == nil {
			continue
		}
		for _, ns := range p.Namespaces {
			caps := append(expandNamespacePolicy(ns.Policy), ns.Capabilities...)
			add(a.namespaces, ns.Name, expandImpliedCapabilities(caps))
			vm := a.variables[ns.Name]
			if vm == nil {
				vm = map[string]capSet{}
				a.variables[ns.Name] = vm
			}
			if vc := expandNamespaceVariables(ns.Policy); len(vc) > 0 {
				add(vm, "*", vc)
			}
			if ns.Variables != nil {
				for _, pp := range ns.Variables.Paths {
					add(vm, pp.PathSpec, pp.Capabilities)
				}
			}
		}
		for _, np := range p.NodePools {
			add(a.nodePools, np.Name, append(expandNodePoolPolicy(np.Policy), np.Capabilities...))
		}
		for _, hv := range p.HostVolumes {
			add(a.hostVolumes, hv.Name, append(expandHostVolumePolicy(hv.Policy), hv.Capabilities...))
		}
		a.agent = mergeLevel(a.agent, p.Agent)
		a.node = mergeLevel(a.node, p.Node)
		a.operator = mergeLevel(a.operator, p.Operator)
		a.quota = mergeLevel(a.quota, p.Quota)
		a.plugin = mergeLevel(a.plugin, p.Plugin)
	}
	a.wildNamespaces = splitGlobs(a.namespaces)
	a.wildNodePools = splitGlobs(a.nodePools)
	a.wildHostVols = splitGlobs(a.hostVolumes)
	return a
}

// splitGlobs moves the patterns with '*' out of m, most specific first.
func splitGlobs(m map[string]capSet) []globCaps {
	var out []globCaps
	for name, cs := range m {
		if strings.Contains(name, "*") {
			out = append(out, globCaps{name, cs})
			delete(m, name)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		li, lj := literalLen(out[i].pattern), literalLen(out[j].pattern)
		if li != lj {
			return li > lj
		}
		return out[i].pattern < out[j].pattern
	})
	return out
}

func literalLen(p string) int { return len(p) - strings.Count(p, "*") }

var levelRank = map[string]int{"": 0, PolicyList: 1, PolicyRead: 2, PolicyWrite: 3}

func mergeLevel(cur string, sp *SimplePolicy) string {
	if sp == nil || cur == PolicyDeny {
		return cur
	}
	if sp.Policy == PolicyDeny {
		return PolicyDeny
	}
	if levelRank[sp.Policy] > levelRank[cur] {
		return sp.Policy
	}
	return cur
}

// globMatch reports whether name matches pattern, where '*' matches any
// run of characters.
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(name, mid)
		if i < 0 {
			return false
		}
		name = name[i+len(mid):]
	}
	return strings.HasSuffix(name, last)
}

// lookup finds the capabilities for name: the exact entry, otherwise the
// matching glob with the most literal characters.
func lookup(exact map[string]capSet, globs []globCaps, name string) capSet {
	if cs, ok := exact[name]; ok {
		return cs
	}
	for _, g := range globs {
		if globMatch(g.pattern, name) {
			return g.caps
		}
	}
	return nil
}

// IsManagement reports whether the ACL is a management one.
func (a *ACL) IsManagement() bool { return a != nil && a.management }

// AllowNamespaceOperation reports whether capability op is granted in ns.
func (a *ACL) AllowNamespaceOperation(ns, op string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	cs := lookup(a.namespaces, a.wildNamespaces, ns)
	if cs == nil {
		return false
	}
	if _, deny := cs[NamespaceCapabilityDeny]; deny {
		return false
	}
	_, ok := cs[op]
	return ok
}

// AllowNamespaceAnyOperation reports whether any of ops is granted in ns.
func (a *ACL) AllowNamespaceAnyOperation(ns string, ops ...string) bool {
	return slices.ContainsFunc(ops, func(op string) bool { return a.AllowNamespaceOperation(ns, op) })
}

// AllowNamespace reports whether the ACL grants anything in ns (what
// reading the namespace itself needs).
func (a *ACL) AllowNamespace(ns string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	cs := lookup(a.namespaces, a.wildNamespaces, ns)
	if len(cs) == 0 {
		return false
	}
	_, deny := cs[NamespaceCapabilityDeny]
	return !deny
}

// AllowNodePoolOperation reports whether op is granted on the node pool.
func (a *ACL) AllowNodePoolOperation(pool, op string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	cs := lookup(a.nodePools, a.wildNodePools, pool)
	if _, deny := cs["deny"]; deny || cs == nil {
		return false
	}
	_, ok := cs[op]
	return ok
}

// AllowHostVolumeOperation reports whether op is granted on the host volume.
func (a *ACL) AllowHostVolumeOperation(vol, op string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	cs := lookup(a.hostVolumes, a.wildHostVols, vol)
	if _, deny := cs["deny"]; deny || cs == nil {
		return false
	}
	_, ok := cs[op]
	return ok
}

func (a *ACL) allowLevel(level, want string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	if level == PolicyDeny {
		return false
	}
	return levelRank[level] >= levelRank[want]
}

// AllowAgentRead and the functions below check the simple blocks.
func (a *ACL) AllowAgentRead() bool     { return a.allowLevel(a.getAgent(), PolicyRead) }
func (a *ACL) AllowAgentWrite() bool    { return a.allowLevel(a.getAgent(), PolicyWrite) }
func (a *ACL) AllowNodeRead() bool      { return a.allowLevel(a.getNode(), PolicyRead) }
func (a *ACL) AllowNodeWrite() bool     { return a.allowLevel(a.getNode(), PolicyWrite) }
func (a *ACL) AllowOperatorRead() bool  { return a.allowLevel(a.getOperator(), PolicyRead) }
func (a *ACL) AllowOperatorWrite() bool { return a.allowLevel(a.getOperator(), PolicyWrite) }
func (a *ACL) AllowQuotaRead() bool     { return a.allowLevel(a.getQuota(), PolicyRead) }
func (a *ACL) AllowQuotaWrite() bool    { return a.allowLevel(a.getQuota(), PolicyWrite) }
func (a *ACL) AllowPluginRead() bool    { return a.allowLevel(a.getPlugin(), PolicyRead) }
func (a *ACL) AllowPluginList() bool    { return a.allowLevel(a.getPlugin(), PolicyList) }

func (a *ACL) getAgent() string {
	if a == nil {
		return ""
	}
	return a.agent
}
func (a *ACL) getNode() string {
	if a == nil {
		return ""
	}
	return a.node
}
func (a *ACL) getOperator() string {
	if a == nil {
		return ""
	}
	return a.operator
}
func (a *ACL) getQuota() string {
	if a == nil {
		return ""
	}
	return a.quota
}
func (a *ACL) getPlugin() string {
	if a == nil {
		return ""
	}
	return a.plugin
}
