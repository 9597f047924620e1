package podman

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/docker"
	"github.com/drover-project/drover/internal/drivers/podman/podmantest"
)

// startService runs a private `podman system service` on sock and waits
// until it answers.
func startService(t *testing.T, sock string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("podman", "system", "service", "--time=0", "unix://"+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			if fp := New(Config{Plugin: withSocket(sock)}).Fingerprint(); fp.Health == drivers.HealthHealthy {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("podman service on %s did not answer", sock)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func withSocket(sock string) docker.PluginConfig {
	pc := DefaultPluginConfig()
	pc.Endpoint = "unix://" + sock
	return pc
}

// A podman service that stops makes the driver unhealthy, saying where it
// looked; when the service is back, the driver is healthy again.
func TestPodmanServiceStopsAndReturns(t *testing.T) {
	podmantest.Client(t) // the machine has podman (or CI fails here)
	sock := filepath.Join(t.TempDir(), "podman.sock")
	svc := startService(t, sock)
	d := New(Config{Plugin: withSocket(sock)})
	if fp := d.Fingerprint(); fp.Health != drivers.HealthHealthy {
		t.Fatalf("fingerprint with the service up: %+v", fp)
	}
	_ = syscall.Kill(-svc.Process.Pid, syscall.SIGKILL)
	_ = svc.Wait()
	fp := d.Fingerprint()
	if fp.Health != drivers.HealthUnhealthy || !strings.Contains(fp.HealthDescription, "podman API service at unix://"+sock) || fp.Attributes["driver.podman"] != "" {
		t.Fatalf("fingerprint with the service gone: %+v", fp)
	}
	_ = os.Remove(sock)
	startService(t, sock)
	if fp := d.Fingerprint(); fp.Health != drivers.HealthHealthy || fp.Attributes["driver.podman"] != "1" {
		t.Fatalf("fingerprint with the service back: %+v", fp)
	}
}
