package feasible

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// nodeNetworkErr agrees with NetworkIndex.SetNode on which nodes have an
// invalid network.
func TestNodeNetworkErr_MatchesSetNode(t *testing.T) {
	addrs := func(a ...structs.NodeNetworkAddress) []*structs.NodeNetworkResource {
		return []*structs.NodeNetworkResource{{Addresses: a}}
	}
	cases := map[string]*structs.Node{
		"plain":        {NodeResources: &structs.NodeResources{}},
		"no resources": {},
		"reserved ok": {ReservedResources: &structs.NodeReservedResources{
			Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "22,80-90"}}},
		"reserved bad": {ReservedResources: &structs.NodeReservedResources{
			Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "22,x"}}},
		"address bad": {NodeResources: &structs.NodeResources{NodeNetworks: addrs(
			structs.NodeNetworkAddress{Address: "10.0.0.1", ReservedPorts: "90-80x"})}},
		"address ok": {NodeResources: &structs.NodeResources{NodeNetworks: addrs(
			structs.NodeNetworkAddress{Address: "10.0.0.1", ReservedPorts: "8080"})}},
		"repeat bad is skipped": {NodeResources: &structs.NodeResources{NodeNetworks: addrs(
			structs.NodeNetworkAddress{Address: "10.0.0.1"},
			structs.NodeNetworkAddress{Alias: "default", Address: "10.0.0.1", ReservedPorts: "bad"})}},
		"same address other alias": {NodeResources: &structs.NodeResources{NodeNetworks: addrs(
			structs.NodeNetworkAddress{Address: "10.0.0.1"},
			structs.NodeNetworkAddress{Alias: "public", Address: "10.0.0.1", ReservedPorts: "bad"})}},
		"empty range":   {NodeResources: &structs.NodeResources{MinDynamicPort: 30000, MaxDynamicPort: 29000}},
		"low max":       {NodeResources: &structs.NodeResources{MaxDynamicPort: 1000}},
		"narrow range":  {NodeResources: &structs.NodeResources{MinDynamicPort: 30000, MaxDynamicPort: 30000}},
		"high min only": {NodeResources: &structs.NodeResources{MinDynamicPort: 40000}},
	}
	invalid := 0
	for name, n := range cases {
		want := structs.NewNetworkIndex().SetNode(n)
		got := nodeNetworkErr(n)
		if (got == nil) != (want == nil) {
			t.Errorf("%s: nodeNetworkErr = %v, SetNode = %v", name, got, want)
		}
		if want != nil {
			invalid++
		}
	}
	if invalid < 4 {
		t.Fatalf("only %d invalid cases: the table does not exercise the errors", invalid)
	}
}
