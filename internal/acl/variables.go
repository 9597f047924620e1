package acl

import "strings"

// Variable capabilities, as Nomad's `variables { path "<glob>" {} }` rules.
const (
	VariablesCapabilityRead    = "read"
	VariablesCapabilityWrite   = "write"
	VariablesCapabilityList    = "list"
	VariablesCapabilityDestroy = "destroy"
	VariablesCapabilityDeny    = "deny"
)

// expandNamespaceVariables is what a namespace's coarse policy grants on
// every variable path ("*"): read lists and reads, write also writes and
// destroys.
func expandNamespaceVariables(policy string) []string {
	switch policy {
	case PolicyRead:
		return []string{VariablesCapabilityRead, VariablesCapabilityList}
	case PolicyWrite:
		return []string{VariablesCapabilityRead, VariablesCapabilityList, VariablesCapabilityWrite, VariablesCapabilityDestroy}
	case PolicyDeny:
		return []string{VariablesCapabilityDeny}
	}
	return nil
}

// AllowVariableOperation reports whether op is granted on the variable at
// path in ns: the namespace block that matches ns (exact, else the most
// specific glob), then its path rule that matches path (exact, else the
// most specific glob). A deny on the matching rule refuses.
func (a *ACL) AllowVariableOperation(ns, path, op string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	cs := a.variableCaps(ns, path)
	if cs == nil {
		return false
	}
	if _, deny := cs[VariablesCapabilityDeny]; deny {
		return false
	}
	_, ok := cs[op]
	return ok
}

// AllowVariableSearch reports whether the ACL may list any variable in ns
// (the check of a list before its answer is filtered per path).
func (a *ACL) AllowVariableSearch(ns string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	for name, rules := range a.variables {
		if name != ns && !(strings.Contains(name, "*") && globMatch(name, ns)) {
			continue
		}
		for _, cs := range rules {
			if _, ok := cs[VariablesCapabilityList]; ok {
				return true
			}
		}
	}
	return false
}

func (a *ACL) variableCaps(ns, path string) capSet {
	rules, ok := a.variables[ns]
	if !ok {
		// The most specific namespace glob.
		best := -1
		for name, r := range a.variables {
			if strings.Contains(name, "*") && globMatch(name, ns) && literalLen(name) > best {
				rules, best = r, literalLen(name)
			}
		}
	}
	if rules == nil {
		return nil
	}
	if cs, ok := rules[path]; ok {
		return cs
	}
	var found capSet
	best := -1
	for pattern, cs := range rules {
		if strings.Contains(pattern, "*") && globMatch(pattern, path) && literalLen(pattern) > best {
			found, best = cs, literalLen(pattern)
		}
	}
	return found
}
