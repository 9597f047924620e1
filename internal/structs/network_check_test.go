package structs

import (
	"testing"
)

// NodeNetworkErr agrees with NetworkIndex.SetNode on which nodes have an
// invalid network.
func TestNodeNetworkErr_MatchesSetNode(t *testing.T) {
	addrs := func(a ...NodeNetworkAddress) []*NodeNetworkResource {
		return []*NodeNetworkResource{{Addresses: a}}
	}
	cases := map[string]*Node{
		"plain":        {NodeResources: &NodeResources{}},
		"no resources": {},
		"reserved ok": {ReservedResources: &NodeReservedResources{
			Networks: NodeReservedNetworkResources{ReservedHostPorts: "22,80-90"}}},
		"reserved bad": {ReservedResources: &NodeReservedResources{
			Networks: NodeReservedNetworkResources{ReservedHostPorts: "22,x"}}},
		"address bad": {NodeResources: &NodeResources{NodeNetworks: addrs(
			NodeNetworkAddress{Address: "10.0.0.1", ReservedPorts: "90-80x"})}},
		"address ok": {NodeResources: &NodeResources{NodeNetworks: addrs(
			NodeNetworkAddress{Address: "10.0.0.1", ReservedPorts: "8080"})}},
		"repeat bad is skipped": {NodeResources: &NodeResources{NodeNetworks: addrs(
			NodeNetworkAddress{Address: "10.0.0.1"},
			NodeNetworkAddress{Alias: "default", Address: "10.0.0.1", ReservedPorts: "bad"})}},
		"same address other alias": {NodeResources: &NodeResources{NodeNetworks: addrs(
			NodeNetworkAddress{Address: "10.0.0.1"},
			NodeNetworkAddress{Alias: "public", Address: "10.0.0.1", ReservedPorts: "bad"})}},
		"empty range":   {NodeResources: &NodeResources{MinDynamicPort: 30000, MaxDynamicPort: 29000}},
		"low max":       {NodeResources: &NodeResources{MaxDynamicPort: 1000}},
		"narrow range":  {NodeResources: &NodeResources{MinDynamicPort: 30000, MaxDynamicPort: 30000}},
		"high min only": {NodeResources: &NodeResources{MinDynamicPort: 40000}},
	}
	invalid := 0
	for name, n := range cases {
		want := NewNetworkIndex().SetNode(n)
		got := NodeNetworkErr(n)
		if (got == nil) != (want == nil) {
			t.Errorf("%s: NodeNetworkErr = %v, SetNode = %v", name, got, want)
		}
		if want != nil {
			invalid++
		}
	}
	if invalid < 4 {
		t.Fatalf("only %d invalid cases: the table does not exercise the errors", invalid)
	}
}

// CheckNetwork records the answer on the node about to be stored; Copy
// starts over, so a copy whose networks change is checked again.
func TestCheckNetworkIsRecordedNotCopied(t *testing.T) {
	n := &Node{ID: "n1", ReservedResources: &NodeReservedResources{Networks: NodeReservedNetworkResources{ReservedHostPorts: "80,bad"}}}
	n.CheckNetwork()
	if NodeNetworkErr(n) == nil {
		t.Fatal("a broken reserved port spec was recorded as valid")
	}
	c := n.Copy()
	c.ReservedResources.Networks.ReservedHostPorts = "80"
	if err := NodeNetworkErr(c); err != nil {
		t.Fatalf("the copy carried the original's answer: %v", err)
	}
	// The recorded answer is what is read (stored nodes never change).
	ok := &Node{ID: "n2"}
	ok.CheckNetwork()
	if NodeNetworkErr(ok) != nil {
		t.Fatal("a node without reserved ports was recorded as invalid")
	}
}
