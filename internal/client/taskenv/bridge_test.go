package taskenv

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// In bridge mode the allocation's own address is in NOMAD_ALLOC_IP_ and
// NOMAD_ALLOC_ADDR_ (with the `to` port), the host's in NOMAD_HOST_*.
func TestBridgeAllocAddress(t *testing.T) {
	in := input()
	in.Alloc.NetworkStatus = &structs.AllocNetworkStatus{InterfaceName: "eth0", Address: "172.26.64.7"}
	got := Build(in)
	for k, v := range map[string]string{
		"NOMAD_ALLOC_IP_http":        "172.26.64.7",
		"NOMAD_ALLOC_ADDR_http":      "172.26.64.7:8080",
		"NOMAD_ALLOC_PORT_http":      "8080",
		"NOMAD_ALLOC_INTERFACE_http": "eth0",
		"NOMAD_HOST_PORT_http":       "23456",
		"NOMAD_HOST_ADDR_http":       "10.0.0.5:23456",
		"NOMAD_ALLOC_ADDR_admin":     "172.26.64.7:23457",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// Host networking has no allocation address.
	if v, ok := Build(input())["NOMAD_ALLOC_IP_http"]; ok {
		t.Errorf("host mode: NOMAD_ALLOC_IP_http = %q, want unset", v)
	}
}
