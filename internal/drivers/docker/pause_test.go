package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A task of a bridge group joins its allocation's pause container and
// publishes no ports through the engine (the client maps them); a
// network_mode, hostname, DNS settings or extra hosts of its own (which
// the engine refuses when joining another container) are refused, naming
// the key.
func TestTranslateBridgeGroup(t *testing.T) {
	cfg := baseTask()
	cfg.NetNS = "/var/run/netns/a1"
	s := spec(t, DefaultPluginConfig(), cfg, map[string]any{"image": "x", "ports": []any{"http"}})
	if got := string(s.Host.NetworkMode); got != "container:drover-pause-a1" {
		t.Fatalf("network mode %q, want container:drover-pause-a1", got)
	}
	if len(s.Host.PortBindings) != 0 {
		t.Fatalf("ports published by the engine in a bridge group: %v", s.Host.PortBindings)
	}
	for key, v := range map[string]any{"network_mode": "host", "hostname": "h", "dns_servers": []any{"1.1.1.1"},
		"dns_search_domains": []any{"x"}, "dns_options": []any{"ndots:1"}, "extra_hosts": []any{"a:10.0.0.1"}} {
		err := specErr(DefaultPluginConfig(), cfg, map[string]any{"image": "x", key: v})
		if err == nil || !strings.HasPrefix(err.Error(), key) {
			t.Errorf("%s in a bridge group: %v, want an error naming %s", key, err, key)
		}
	}
}

// The pause program runs on its own (no libc, no loader) and blocks until
// killed.
func TestPauseELFBlocksUntilKilled(t *testing.T) {
	if _, err := pauseELF("arm64"); err == nil || !strings.Contains(err.Error(), "arm64") {
		t.Fatalf("arm64: %v, want an error naming the architecture", err)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the pause program is an amd64 Linux binary")
	}
	bin, err := pauseELF("amd64")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// It must reach pause(2): sleeping (S), not exited or spinning.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "stat"))
		if err == nil {
			if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "S" {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("pause exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pause never blocked: %s", b)
		}
		runtime.Gosched()
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case err := <-done:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("pause ended with %v, want killed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pause survived SIGKILL")
	}
}

// A podman task of a bridge group joins the allocation's namespace by its
// path (no pause container: podman's driver does not make the network),
// publishes no ports through the engine, and may keep its hostname, DNS
// settings and extra hosts, which podman applies in a path namespace.
func TestTranslateBridgeGroupPodman(t *testing.T) {
	cfg := baseTask()
	cfg.NetNS = "/var/run/netns/a1"
	tc, err := ParseTaskConfig(map[string]any{"image": "x", "ports": []any{"http"}, "hostname": "h",
		"dns_servers": []any{"1.1.1.1"}, "extra_hosts": []any{"a:10.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	pc := DefaultPluginConfig()
	fl := Flavor{Name: "podman", Podman: true}
	s, err := buildCreateSpec(&pc, fl, cfg, tc, tc.Image)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(s.Host.NetworkMode); got != "ns:/var/run/netns/a1" {
		t.Fatalf("network mode %q, want ns:/var/run/netns/a1", got)
	}
	if len(s.Host.PortBindings) != 0 || len(s.Config.ExposedPorts) != 0 {
		t.Fatalf("ports published by the engine in a bridge group: %v", s.Host.PortBindings)
	}
	if s.Config.Hostname != "h" || len(s.Host.DNS) != 1 || len(s.Host.ExtraHosts) != 1 {
		t.Fatalf("hostname %q, dns %v, extra hosts %v: want the task's", s.Config.Hostname, s.Host.DNS, s.Host.ExtraHosts)
	}
	tc.NetworkMode = "host"
	if _, err := buildCreateSpec(&pc, fl, cfg, tc, tc.Image); err == nil || !strings.HasPrefix(err.Error(), "network_mode") {
		t.Fatalf("network_mode in a bridge group: %v, want an error naming network_mode", err)
	}
	if New(Config{Flavor: fl}).CreatesNetwork() || !New(Config{}).CreatesNetwork() {
		t.Fatal("only docker's flavor makes the allocation's namespace")
	}
}
