package bridgenet

import (
	"strings"
	"testing"
)

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Subnet: "nope"}, `bridge_network_subnet "nope": not an IPv4 CIDR`},
		{Config{Subnet: "fd00::/64"}, "not an IPv4 CIDR"},
		{Config{Subnet: "10.0.0.0/30"}, "too small"},
		{Config{BridgeName: "a-very-long-bridge-name"}, "longer than 15 characters"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	m, err := New(Config{})
	if err != nil || m.cfg.BridgeName != "nomad" || m.subnet.String() != "172.26.64.0/20" || m.gw.String() != "172.26.64.1" {
		t.Fatalf("defaults: %+v, %v", m, err)
	}
}

// Addresses are persisted, kept by their allocation across managers (an
// agent restart), never handed out twice, and reused only once released.
func TestAddressPlan(t *testing.T) {
	dir := t.TempDir()
	m, err := New(Config{Subnet: "10.7.0.0/29", StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, id := range []string{"a", "b", "c", "d", "e"} { // .2 .. .6
		ip, err := m.assign(id)
		if err != nil {
			t.Fatalf("assign %s: %v", id, err)
		}
		got[id] = ip.String()
	}
	if got["a"] != "10.7.0.2" || got["e"] != "10.7.0.6" {
		t.Fatalf("plan %v", got)
	}
	if _, err := m.assign("f"); err == nil || !strings.Contains(err.Error(), "no free address") {
		t.Fatalf("assign past the subnet's end: %v", err)
	}
	again, _ := New(Config{Subnet: "10.7.0.0/29", StateDir: dir})
	if ip, err := again.assign("c"); err != nil || ip.String() != got["c"] {
		t.Fatalf("after a restart c got %v, %v; want %s", ip, err, got["c"])
	}
	if err := again.release("b"); err != nil {
		t.Fatal(err)
	}
	if ip, err := again.assign("f"); err != nil || ip.String() != got["b"] {
		t.Fatalf("f got %v, %v; want the released %s", ip, err, got["b"])
	}
}

func TestSplitRule(t *testing.T) {
	got, err := splitRule(`DROVER-PORTMAP -p tcp -m comment --comment "drover alloc x-1" -j DNAT --to-destination 10.0.0.2:80`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DROVER-PORTMAP", "-p", "tcp", "-m", "comment", "--comment", "drover alloc x-1", "-j", "DNAT", "--to-destination", "10.0.0.2:80"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q", got)
	}
}
