package acl

import (
	"slices"
	"testing"
)

// RulesJSON (Expanded) lists what each block grants: the shorthand's
// capabilities next to the block's own, the implied ones, no repeats; the
// parsed policy is left as written.
func TestPolicyExpanded(t *testing.T) {
	p, err := Parse(`
namespace "default" { policy = "read" capabilities = ["read-job", "alloc-lifecycle"] }
namespace "team-*" { capabilities = ["host-volume-register"] }
node_pool "*" { policy = "write" }
node { policy = "write" }`)
	if err != nil {
		t.Fatal(err)
	}
	e := p.Expanded()
	def := e.Namespaces[0].Capabilities
	for _, c := range []string{"read-job", "alloc-lifecycle", "list-jobs", "read-scaling-policy"} {
		if !slices.Contains(def, c) {
			t.Errorf("default lacks %s: %v", c, def)
		}
	}
	if slices.Contains(def, "submit-job") {
		t.Errorf("read grants submit-job: %v", def)
	}
	if n := len(slices.Compact(slices.Sorted(slices.Values(def)))); n != len(def) {
		t.Errorf("repeated capabilities: %v", def)
	}
	if team := e.Namespaces[1].Capabilities; !slices.Contains(team, "host-volume-create") || !slices.Contains(team, "host-volume-read") {
		t.Errorf("implied capabilities missing: %v", team)
	}
	if np := e.NodePools[0].Capabilities; !slices.Contains(np, "write") {
		t.Errorf("node pool write: %v", np)
	}
	if e.Node == nil || e.Node.Policy != "write" {
		t.Errorf("node block: %+v", e.Node)
	}
	if len(p.Namespaces[0].Capabilities) != 2 || p.NodePools[0].Capabilities != nil {
		t.Errorf("the parsed policy changed: %v %v", p.Namespaces[0].Capabilities, p.NodePools[0].Capabilities)
	}
}
