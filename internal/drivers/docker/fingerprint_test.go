package docker

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/drivers"
)

// fakeEngine answers the calls Fingerprint makes, on a unix socket.
func fakeEngine(t *testing.T, sock string) (stop func()) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		w.Write([]byte("OK"))
	})
	mux.HandleFunc("/v1.41/version", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"Version":"20.10.24","ApiVersion":"1.41","Os":"linux"}`))
	})
	mux.HandleFunc("/v1.41/info", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"Runtimes":{"runc":{"path":"runc"},"io.containerd.runc.v2":{"path":"runc"}}}`))
	})
	mux.HandleFunc("/v1.41/networks/bridge", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"Name":"bridge","IPAM":{"Config":[{"Subnet":"172.17.0.0/16","Gateway":"172.17.0.1"}]}}`))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	return func() { srv.Close() }
}

// An engine that answers makes the driver healthy with its version,
// runtimes and bridge IP; one that stops answering makes it unhealthy
// with the reason; one that comes back makes it healthy again.
func TestFingerprintFollowsEngine(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	pc := DefaultPluginConfig()
	pc.Endpoint = "unix://" + sock
	d := New(Config{Plugin: pc})

	stop := fakeEngine(t, sock)
	fp := d.Fingerprint()
	want := map[string]string{
		"driver.docker": "1", "driver.docker.version": "20.10.24", "driver.docker.api_version": "1.41",
		"driver.docker.bridge_ip": "172.17.0.1", "driver.docker.runtimes": "io.containerd.runc.v2,runc",
		"driver.docker.privileged.enabled": "false", "driver.docker.volumes.enabled": "false", "driver.docker.os_type": "linux",
	}
	if fp.Health != drivers.HealthHealthy {
		t.Fatalf("fingerprint %+v", fp)
	}
	for k, v := range want {
		if fp.Attributes[k] != v {
			t.Errorf("%s = %q, want %q", k, fp.Attributes[k], v)
		}
	}

	stop()
	fp = d.Fingerprint()
	if fp.Health != drivers.HealthUnhealthy || len(fp.Attributes) != 0 ||
		!strings.Contains(fp.HealthDescription, "Failed to connect to docker daemon at unix://"+sock) {
		t.Fatalf("engine gone: %+v", fp)
	}

	stop = fakeEngine(t, sock)
	defer stop()
	if fp = d.Fingerprint(); fp.Health != drivers.HealthHealthy || fp.Attributes["driver.docker"] != "1" {
		t.Fatalf("engine back: %+v", fp)
	}
}
