package fake

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/devices"
	"github.com/drover-project/drover/internal/structs"
)

func TestFromConfigFingerprintAndReserve(t *testing.T) {
	p, err := FromConfig(map[string]any{"vendor": "drover", "type": "gpu", "name": "fake-1", "count": 4,
		"attributes": []map[string]any{{"memory": "8 GiB"}}})
	if err != nil {
		t.Fatal(err)
	}
	groups := p.Fingerprint()
	if len(groups) != 1 || len(groups[0].Instances) != 4 || groups[0].Instances[3].ID != "fake-1-3" {
		t.Fatalf("fingerprint = %+v", groups)
	}
	if v, dim, ok := structs.DeviceAttributeNumber(groups[0].Attributes["memory"]); !ok || dim != "bytes" || v != 8<<30 {
		t.Fatalf("memory attribute = %v %q %v", v, dim, ok)
	}

	m := devices.NewManager(p)
	r, err := m.Reserve([]*structs.AllocatedDeviceResource{{Vendor: "drover", Type: "gpu", Name: "fake-1", DeviceIDs: []string{"fake-1-2", "fake-1-0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Envs[EnvVisibleDevices]; got != "fake-1-0,fake-1-2" {
		t.Fatalf("%s = %q", EnvVisibleDevices, got)
	}
	if _, err := m.Reserve([]*structs.AllocatedDeviceResource{{Vendor: "drover", Type: "gpu", Name: "fake-1", DeviceIDs: []string{"fake-1-9"}}}); err == nil {
		t.Fatal("reserved an instance the plugin does not have")
	}
	if _, err := m.Reserve([]*structs.AllocatedDeviceResource{{Vendor: "amd", Type: "gpu", Name: "x", DeviceIDs: []string{"1"}}}); err == nil || !strings.Contains(err.Error(), "no device plugin provides amd/gpu/x") {
		t.Fatalf("unowned grant: err = %v", err)
	}
	if _, err := FromConfig(map[string]any{"colour": "red"}); err == nil || !strings.Contains(err.Error(), `"colour"`) {
		t.Fatalf("unknown key: err = %v", err)
	}
	if _, err := FromConfig(map[string]any{"count": 0}); err == nil {
		t.Fatal("count 0 accepted")
	}
}
