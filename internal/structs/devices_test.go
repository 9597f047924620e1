package structs

import "testing"

func devAlloc(id, status string, ids ...string) *Allocation {
	a := fitAlloc(id, 100, 100, 0)
	a.ClientStatus = status
	a.AllocatedResources.Tasks["t"].Devices = []*AllocatedDeviceResource{{Vendor: "drover", Type: "gpu", Name: "fake-1", DeviceIDs: ids}}
	return a
}

func TestAllocsFitDeviceOversubscription(t *testing.T) {
	node := fitNode()
	node.NodeResources.Devices = []*NodeDeviceResource{{Vendor: "drover", Type: "gpu", Name: "fake-1",
		Instances: []*NodeDevice{{ID: "a", Healthy: true}, {ID: "b", Healthy: true}}}}
	run, done := AllocClientStatusRunning, AllocClientStatusComplete
	cases := []struct {
		name   string
		allocs []*Allocation
		fit    bool
	}{
		{"distinct instances", []*Allocation{devAlloc("1", run, "a"), devAlloc("2", run, "b")}, true},
		{"same instance twice", []*Allocation{devAlloc("1", run, "a"), devAlloc("2", run, "a")}, false},
		{"same instance within one alloc", []*Allocation{devAlloc("1", run, "a", "a")}, false},
		{"instance the node lacks", []*Allocation{devAlloc("1", run, "c")}, false},
		{"a finished alloc holds nothing", []*Allocation{devAlloc("1", done, "a"), devAlloc("2", run, "a")}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fit, dim, _, err := AllocsFit(node, c.allocs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fit != c.fit {
				t.Fatalf("fit = %v (%q), want %v", fit, dim, c.fit)
			}
			if !fit && dim != DimensionDeviceOversubscribed {
				t.Fatalf("dimension = %q", dim)
			}
		})
	}
	// A caller that indexed ports itself still gets the device check.
	if fit, _, _, _ := AllocsFit(node, []*Allocation{devAlloc("1", run, "a"), devAlloc("2", run, "a")}, NewNetworkIndex()); fit {
		t.Fatal("device check skipped when a network index is passed")
	}
}

func TestParseDeviceAttribute(t *testing.T) {
	cases := []struct {
		in   string
		base float64
		dim  string
		num  bool
		str  string
	}{
		{"8 GiB", 8 << 30, "bytes", true, "8 GiB"},
		{"8GiB", 8 << 30, "bytes", true, "8 GiB"},
		{"1.5 GHz", 1.5e9, "hz", true, "1.5 GHz"},
		{"12", 12, "", true, "12"},
		{"300 W", 300, "watts", true, "300 W"},
		{"Tesla V100", 0, "", false, "Tesla V100"},
		{"8 parsecs", 0, "", false, "8 parsecs"},
		{"true", 0, "", false, "true"},
	}
	for _, c := range cases {
		a := ParseDeviceAttribute(c.in)
		v, dim, ok := DeviceAttributeNumber(a)
		if ok != c.num || v != c.base || dim != c.dim {
			t.Errorf("%q: number = %v %q %v, want %v %q %v", c.in, v, dim, ok, c.base, c.dim, c.num)
		}
		if s := DeviceAttributeString(a); s != c.str {
			t.Errorf("%q: string = %q, want %q", c.in, s, c.str)
		}
	}
}
