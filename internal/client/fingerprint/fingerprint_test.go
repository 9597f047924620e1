package fingerprint

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

func TestNode_HostAndOverrides(t *testing.T) {
	n := &structs.Node{}
	Node(Config{AllocDir: t.TempDir(), DevMode: true, Version: "1.2.3", MinDynamicPort: 21000, MaxDynamicPort: 22000,
		Reserved: Reserved{CPU: 100, MemoryMB: 64, DiskMB: 10, ReservedPorts: "22", Cores: "0"}, ReservableCores: "0-1,9999"}, n)
	for _, k := range []string{"cpu.arch", "cpu.numcores", "cpu.frequency", "cpu.totalcompute", "memory.totalbytes",
		"kernel.name", "kernel.version", "kernel.arch", "unique.hostname", "unique.network.ip-address",
		"unique.storage.bytestotal", "unique.storage.bytesfree", "nomad.version", "nomad.service_discovery"} {
		if n.Attributes[k] == "" {
			t.Errorf("attribute %s missing", k)
		}
	}
	cores, _ := strconv.Atoi(n.Attributes["cpu.numcores"])
	mhz, _ := strconv.Atoi(n.Attributes["cpu.frequency"])
	if n.Attributes["cpu.totalcompute"] != strconv.Itoa(cores*mhz) || n.NodeResources.Cpu.CpuShares != int64(cores*mhz) {
		t.Errorf("totalcompute %s != %d*%d", n.Attributes["cpu.totalcompute"], cores, mhz)
	}
	if n.NodeResources.Memory.MemoryMB <= 0 || n.NodeResources.Disk.DiskMB <= 0 {
		t.Errorf("resources %+v", n.NodeResources)
	}
	if got := n.Attributes["unique.network.ip-address"]; got != "127.0.0.1" {
		t.Errorf("dev ip %q", got)
	}
	if nn := n.NodeResources.NodeNetworks; len(nn) != 1 || nn[0].Device != "lo" {
		t.Errorf("node networks %+v", nn)
	}
	if n.NodeResources.MinDynamicPort != 21000 || n.ReservedResources.Cpu.CpuShares != 100 ||
		n.ReservedResources.Networks.ReservedHostPorts != "22" || n.Attributes["nomad.version"] != "1.2.3" {
		t.Errorf("config not applied: %+v %+v", n.NodeResources, n.ReservedResources)
	}

	// client.reserved.cores and client.reservable_cores (cores the host
	// lacks are dropped: this machine has at least one).
	if rc := n.ReservedResources.Cpu.ReservedCpuCores; len(rc) != 1 || rc[0] != 0 {
		t.Errorf("reserved cores %v, want [0]", rc)
	}
	if rc := n.NodeResources.Cpu.ReservableCpuCores; len(rc) == 0 || len(rc) > 2 || rc[0] != 0 {
		t.Errorf("reservable cores %v, want [0] or [0 1]", rc)
	}

	n2 := &structs.Node{}
	Node(Config{AllocDir: t.TempDir(), DevMode: true, CPUTotalCompute: 12345, MemoryTotalMB: 777, Denylist: []string{"storage"}}, n2)
	if n2.NodeResources.Cpu.CpuShares != 12345 || n2.NodeResources.Memory.MemoryMB != 777 {
		t.Errorf("overrides ignored: %+v", n2.NodeResources)
	}
	if _, ok := n2.Attributes["unique.storage.bytesfree"]; ok {
		t.Error("denylisted storage fingerprinter ran")
	}
}

func TestCPU_FallbackFrequencyIsSaid(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cpuinfo"), []byte("model name\t: Fake CPU\n"), 0o644)
	n := &structs.Node{Attributes: map[string]string{}, NodeResources: &structs.NodeResources{}}
	if err := fpCPU(&Config{ProcRoot: root, SysRoot: root}, n); err != nil {
		t.Fatal(err)
	}
	if n.Attributes["cpu.frequency"] != "2000" || n.Attributes["cpu.frequency.source"] != "assumed" || n.Attributes["cpu.modelname"] != "Fake CPU" {
		t.Fatalf("attrs %v", n.Attributes)
	}
}

func TestDrivers(t *testing.T) {
	ok := mock.New()
	gone := mock.NewNamed("gone")
	gone.SetHealth(drivers.HealthUndetected, "not here")
	n := &structs.Node{}
	Drivers(n, []drivers.Driver{ok, gone}, time.Now())
	if d := n.Drivers["mock_driver"]; d == nil || !d.Detected || !d.Healthy || n.Attributes["driver.mock_driver"] != "1" {
		t.Fatalf("mock driver info %+v attrs %v", d, n.Attributes)
	}
	if d := n.Drivers["gone"]; d == nil || d.Detected || n.Attributes["driver.gone"] != "" {
		t.Fatalf("undetected driver %+v", d)
	}
}

// Cores named in client.reservable_cores or client.reserved.cores that the
// host does not have are ignored with a warning naming the key (before,
// silently: reservable_cores = "5-7" on a 2-core node left it with no
// reservable core and every `cores` job blocked with no hint why).
func TestNode_WarnsOfCoresTheHostLacks(t *testing.T) {
	var buf bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Warn})
	n := &structs.Node{}
	Node(Config{AllocDir: t.TempDir(), DevMode: true, Logger: logger,
		Reserved: Reserved{Cores: "1000"}, ReservableCores: "0,1001"}, n)
	out := buf.String()
	for _, want := range []string{"client.reservable_cores names cores this host does not have", "client.reserved.cores names cores this host does not have"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	buf.Reset()
	Node(Config{AllocDir: t.TempDir(), DevMode: true, Logger: logger, Reserved: Reserved{Cores: "0"}, ReservableCores: "0"}, &structs.Node{})
	if buf.Len() != 0 {
		t.Errorf("cores the host has were warned about: %s", buf.String())
	}
}

// handshakeDriver's fingerprint is healthy only if its partner's
// fingerprint starts while it waits: the drivers are fingerprinted at once.
type handshakeDriver struct {
	*mock.Driver
	mine, partner chan struct{}
}

func (h *handshakeDriver) Fingerprint() *drivers.Fingerprint {
	close(h.mine)
	select {
	case <-h.partner:
		return &drivers.Fingerprint{Health: drivers.HealthHealthy, HealthDescription: "Healthy"}
	case <-time.After(10 * time.Second):
		return &drivers.Fingerprint{Health: drivers.HealthUnhealthy, HealthDescription: "fingerprinted alone"}
	}
}

// Drivers are fingerprinted at once, so one engine slow to answer (podman's
// API takes seconds on a loaded host, and may wait up to its
// client_http_timeout) delays neither the agent's start nor another
// driver's health by more than its own wait. They ran one after another.
func TestDriversFingerprintedAtOnce(t *testing.T) {
	a, b := make(chan struct{}), make(chan struct{})
	da := &handshakeDriver{Driver: mock.NewNamed("a"), mine: a, partner: b}
	db := &handshakeDriver{Driver: mock.NewNamed("b"), mine: b, partner: a}
	n := &structs.Node{}
	Drivers(n, []drivers.Driver{da, db}, time.Now())
	for _, name := range []string{"a", "b"} {
		if i := n.Drivers[name]; i == nil || !i.Healthy {
			t.Fatalf("driver %s: %+v", name, i)
		}
	}
}
