package structs

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func netNode() *Node {
	return &Node{
		ID: "n1",
		NodeResources: &NodeResources{
			NodeNetworks: []*NodeNetworkResource{{
				Mode: "host", Device: "eth0",
				Addresses: []NodeNetworkAddress{
					{Alias: "", Address: "10.0.0.1", ReservedPorts: "9000"},
					{Alias: "public", Address: "1.2.3.4"},
				},
			}},
			Networks: []*NetworkResource{{Device: "eth1", IP: "10.0.0.2"}},
		},
		ReservedResources: &NodeReservedResources{Networks: NodeReservedNetworkResources{ReservedHostPorts: "22,80,8000-8002"}},
	}
}

func TestNetworkIndexSetNode(t *testing.T) {
	n := netNode()
	n.ForeignPorts = []string{"10.0.0.1:5432/tcp", "0.0.0.0:53/udp", "[::]:7000/tcp", "bogus", "10.0.0.9:99/sctp"}
	idx := NewNetworkIndex()
	if err := idx.SetNode(n); err != nil {
		t.Fatal(err)
	}
	if got := len(idx.HostNetworks["default"]); got != 2 {
		t.Fatalf("default addresses = %d, want 2 (NodeNetworks + Networks[].IP)", got)
	}
	if got := len(idx.HostNetworks["public"]); got != 1 {
		t.Fatalf("public addresses = %d", got)
	}
	if idx.MinDynamicPort != 20000 || idx.MaxDynamicPort != 32000 {
		t.Fatalf("default range = %d-%d", idx.MinDynamicPort, idx.MaxDynamicPort)
	}
	cases := []struct {
		ip   string
		port uint
		used bool
	}{
		{"10.0.0.1", 22, true}, {"1.2.3.4", 22, true}, {"10.0.0.2", 8001, true}, // global reserved everywhere
		{"10.0.0.1", 9000, true}, {"1.2.3.4", 9000, false}, // per-address reserved
		{"10.0.0.1", 5432, true}, {"1.2.3.4", 5432, false}, // foreign on one ip
		{"10.0.0.2", 53, true}, {"1.2.3.4", 7000, true}, // foreign on wildcard
		{"10.0.0.1", 8003, false},
	}
	for _, c := range cases {
		if got := idx.UsedPorts[c.ip].Check(c.port); got != c.used {
			t.Errorf("%s:%d used=%v, want %v", c.ip, c.port, got, c.used)
		}
	}
	if _, ok := idx.UsedPorts["10.0.0.9"]; ok {
		t.Error("malformed foreign port entry must be skipped")
	}

	n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 30000, 30010
	idx = NewNetworkIndex()
	if err := idx.SetNode(n); err != nil || idx.MinDynamicPort != 30000 || idx.MaxDynamicPort != 30010 {
		t.Fatalf("custom range: %v %d-%d", err, idx.MinDynamicPort, idx.MaxDynamicPort)
	}
	n.ReservedResources.Networks.ReservedHostPorts = "80-"
	if err := NewNetworkIndex().SetNode(n); err == nil {
		t.Fatal("want error on bad reserved spec")
	}
}

func portAlloc(id, status string, ports ...AllocatedPortMapping) *Allocation {
	return &Allocation{ID: id, ClientStatus: status, AllocatedResources: &AllocatedResources{
		Shared: AllocatedSharedResources{Ports: ports},
	}}
}

func TestNetworkIndexAddAllocs(t *testing.T) {
	p := func(v int, ip string) AllocatedPortMapping {
		return AllocatedPortMapping{Label: "x", Value: v, HostIP: ip}
	}
	cases := []struct {
		name    string
		allocs  []*Allocation
		collide bool
	}{
		{"distinct", []*Allocation{portAlloc("a", "running", p(20000, "10.0.0.1")), portAlloc("b", "running", p(20001, "10.0.0.1"))}, false},
		{"same port other ip", []*Allocation{portAlloc("a", "running", p(20000, "10.0.0.1")), portAlloc("b", "running", p(20000, "1.2.3.4"))}, false},
		{"same port same ip", []*Allocation{portAlloc("a", "running", p(20000, "10.0.0.1")), portAlloc("b", "pending", p(20000, "10.0.0.1"))}, true},
		{"terminal skipped", []*Allocation{portAlloc("a", "complete", p(20000, "10.0.0.1")), portAlloc("b", "running", p(20000, "10.0.0.1"))}, false},
		{"reserved host port", []*Allocation{portAlloc("a", "running", p(22, "10.0.0.1"))}, true},
		{"ignore collision", []*Allocation{portAlloc("a", "running", p(22, "10.0.0.1"))}, true},
	}
	cases[5].allocs[0].AllocatedResources.Shared.Ports[0].IgnoreCollision = true
	cases[5].collide = false
	for _, c := range cases {
		idx := NewNetworkIndex()
		if err := idx.SetNode(netNode()); err != nil {
			t.Fatal(err)
		}
		collide, reason := idx.AddAllocs(c.allocs)
		if collide != c.collide {
			t.Errorf("%s: collide=%v (%s), want %v", c.name, collide, reason, c.collide)
		}
	}
	// Task-level (legacy) networks are indexed too.
	idx := NewNetworkIndex()
	_ = idx.SetNode(netNode())
	legacy := &Allocation{ID: "l", ClientStatus: "running", AllocatedResources: &AllocatedResources{Tasks: map[string]*AllocatedTaskResources{
		"t": {Networks: []*NetworkResource{{IP: "10.0.0.2", DynamicPorts: []Port{{Label: "d", Value: 25000}}}}},
	}}}
	idx.AddAllocs([]*Allocation{legacy})
	if !idx.UsedPorts["10.0.0.2"].Check(25000) {
		t.Fatal("task network port not indexed")
	}
}

func TestAssignPortsStaticAndMapping(t *testing.T) {
	idx := NewNetworkIndex()
	_ = idx.SetNode(netNode())
	offer, err := idx.AssignPorts(&NetworkResource{
		ReservedPorts: []Port{{Label: "http", Value: 8080, To: -1}, {Label: "pub", Value: 443, HostNetwork: "public"}},
		DynamicPorts:  []Port{{Label: "dyn", To: 9090}, {Label: "same", To: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	http, _ := offer.Get("http")
	if http.Value != 8080 || http.To != 8080 || http.HostIP != "10.0.0.1" {
		t.Errorf("http = %+v", http)
	}
	pub, _ := offer.Get("pub")
	if pub.HostIP != "1.2.3.4" {
		t.Errorf("pub = %+v", pub)
	}
	dyn, _ := offer.Get("dyn")
	if dyn.To != 9090 || dyn.Value < 20000 || dyn.Value > 32000 {
		t.Errorf("dyn = %+v", dyn)
	}
	same, _ := offer.Get("same")
	if same.To != same.Value {
		t.Errorf("same = %+v", same)
	}
	if idx.UsedPorts["10.0.0.1"].Check(8080) {
		t.Error("AssignPorts must not mutate UsedPorts")
	}

	errCases := []struct {
		name string
		ask  *NetworkResource
		want string
	}{
		{"reserved host port", &NetworkResource{ReservedPorts: []Port{{Label: "ssh", Value: 22}}}, "reserved port collision ssh=22"},
		{"static twice in one ask on single address", &NetworkResource{ReservedPorts: []Port{{Label: "a", Value: 443, HostNetwork: "public"}, {Label: "b", Value: 443, HostNetwork: "public"}}}, "reserved port collision b=443"},
		{"unknown network", &NetworkResource{DynamicPorts: []Port{{Label: "a", HostNetwork: "nope"}}}, "no addresses available for nope network"},
	}
	for _, c := range errCases {
		_, err := idx.AssignPorts(c.ask)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// Static on the second address when the first is taken.
	idx.AddReserved(AllocatedPorts{{Label: "x", Value: 8080, HostIP: "10.0.0.1"}})
	offer, err = idx.AssignPorts(&NetworkResource{ReservedPorts: []Port{{Label: "http", Value: 8080}}})
	if err != nil || offer[0].HostIP != "10.0.0.2" {
		t.Fatalf("fallback address: %v %+v", err, offer)
	}
}

// tightIndex returns an index for a node with one address and a dynamic
// range of size span, seeded for reproducibility.
func tightIndex(t testing.TB, span int, seed uint64) *NetworkIndex {
	n := &Node{ID: "n", NodeResources: &NodeResources{
		Networks: []*NetworkResource{{IP: "10.0.0.1"}}, MinDynamicPort: 20000, MaxDynamicPort: 20000 + span - 1,
	}}
	idx := NewNetworkIndex()
	idx.Rand = rand.New(rand.NewPCG(seed, seed*7+1))
	if err := idx.SetNode(n); err != nil {
		t.Fatal(err)
	}
	return idx
}

func dynAsk(n int) *NetworkResource {
	ask := &NetworkResource{}
	for i := 0; i < n; i++ {
		ask.DynamicPorts = append(ask.DynamicPorts, Port{Label: "p" + uitoa(uint(i))})
	}
	return ask
}

func assertDistinct(t *testing.T, offers ...AllocatedPorts) {
	t.Helper()
	seen := map[int]string{}
	for _, o := range offers {
		for _, p := range o {
			if prev, ok := seen[p.Value]; ok {
				t.Fatalf("port %d given to both %s and %s", p.Value, prev, p.Label)
			}
			seen[p.Value] = p.Label
		}
	}
}

// Seed 000 (a): many dynamic ports of one ask on a nearly full range get
// distinct ports, or a clear error, never a duplicate.
func TestAssignPortsSeed000_ManyDynamicNearlyFull(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		idx := tightIndex(t, 30, seed)
		// Fill 20 of 30 ports.
		for p := 20000; p < 20020; p++ {
			idx.UsedPorts["10.0.0.1"].Set(uint(p))
		}
		offer, err := idx.AssignPorts(dynAsk(10))
		if err != nil {
			t.Fatalf("seed %d: 10 free ports for 10 labels must fit: %v", seed, err)
		}
		assertDistinct(t, offer)
		for _, p := range offer {
			if p.Value < 20020 || p.Value > 20029 {
				t.Fatalf("seed %d: port %d outside the free part of the range", seed, p.Value)
			}
		}
		if _, err := idx.AssignPorts(dynAsk(11)); err == nil || !strings.Contains(err.Error(), "dynamic port selection failed") {
			t.Fatalf("seed %d: 11 labels on 10 free ports: err = %v", seed, err)
		}
	}
}

// Seed 000 (b): an offer added with AddReserved is never offered again.
func TestAssignPortsSeed000_AddReservedThenAsk(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		idx := tightIndex(t, 8, seed)
		o1, err := idx.AssignPorts(&NetworkResource{
			ReservedPorts: []Port{{Label: "s", Value: 20003}},
			DynamicPorts:  []Port{{Label: "a"}, {Label: "b"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		assertDistinct(t, o1)
		if c, r := idx.AddReserved(o1); c {
			t.Fatalf("fresh offer collided: %s", r)
		}
		o2, err := idx.AssignPorts(dynAsk(5))
		if err != nil {
			t.Fatalf("seed %d: 5 ports left: %v", seed, err)
		}
		assertDistinct(t, o1, o2)
	}
}

// Seed 000 (c): a range exactly filled by asks places everything.
func TestAssignPortsSeed000_ExactFill(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		idx := tightIndex(t, 12, seed)
		var offers []AllocatedPorts
		for i := 0; i < 4; i++ {
			o, err := idx.AssignPorts(dynAsk(3))
			if err != nil {
				t.Fatalf("seed %d ask %d: %v", seed, i, err)
			}
			idx.AddReserved(o)
			offers = append(offers, o)
		}
		assertDistinct(t, offers...)
		if _, err := idx.AssignPorts(dynAsk(1)); err == nil {
			t.Fatalf("seed %d: full range must fail", seed)
		}
	}
}

// Randomized: asks mixing static and dynamic ports on random ranges never
// produce a duplicate (within an ask, or across asks kept via AddReserved).
func TestAssignPortsRandomizedNoDuplicates(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		span := 1 + r.IntN(40)
		idx := tightIndex(t, span, uint64(iter))
		for p := 0; p < span; p++ {
			if r.IntN(3) == 0 {
				idx.UsedPorts["10.0.0.1"].Set(uint(20000 + p))
			}
		}
		var kept []AllocatedPorts
		for a := 0; a < 5; a++ {
			ask := dynAsk(r.IntN(5))
			if r.IntN(2) == 0 {
				ask.ReservedPorts = []Port{{Label: "s", Value: 20000 + r.IntN(span)}}
			}
			o, err := idx.AssignPorts(ask)
			if err != nil {
				continue
			}
			assertDistinct(t, o)
			for _, p := range o {
				if idx.UsedPorts["10.0.0.1"].Check(uint(p.Value)) {
					t.Fatalf("iter %d: offered used port %d", iter, p.Value)
				}
			}
			if c, reason := idx.AddReserved(o); c {
				t.Fatalf("iter %d: offer collided with index: %s", iter, reason)
			}
			kept = append(kept, o)
		}
		assertDistinct(t, kept...)
	}
}
