package docker

import (
	"errors"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/drover-project/drover/internal/drivers"
)

// fakeEngine answers the calls Fingerprint makes, on a unix socket. While
// slow is set, info and the bridge network's inspect answer 500 (an engine
// too loaded to answer them in time); while hung is set, the ping is not
// answered until the caller gives up.
func fakeEngine(t *testing.T, sock string, slow ...*atomic.Bool) (stop func()) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		if len(slow) > 1 && slow[1].Load() {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Api-Version", "1.41")
		w.Write([]byte("OK"))
	})
	mux.HandleFunc("/v1.41/version", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"Version":"20.10.24","ApiVersion":"1.41","Os":"linux"}`))
	})
	failing := func(w http.ResponseWriter) bool {
		if len(slow) > 0 && slow[0].Load() {
			http.Error(w, `{"message":"context deadline exceeded"}`, http.StatusInternalServerError)
			return true
		}
		return false
	}
	mux.HandleFunc("/v1.41/info", func(w http.ResponseWriter, r *http.Request) {
		if failing(w) {
			return
		}
		w.Write([]byte(`{"Runtimes":{"runc":{"path":"runc"},"io.containerd.runc.v2":{"path":"runc"}},` +
			`"SecurityOptions":["name=seccomp,profile=default"],"CgroupVersion":"1"}`))
	})
	mux.HandleFunc("/v1.41/networks/bridge", func(w http.ResponseWriter, r *http.Request) {
		if failing(w) {
			return
		}
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

// An engine that answers its ping and version but not a later call (info,
// the bridge network) keeps the attributes those calls gave last time, for
// docker and podman alike: a changed attribute registers the node again,
// and a loaded host's engine (podman's info takes seconds there) made the
// node flap between two attribute sets every minute or so, each flip a
// registration and every allocation's state sent again.
func TestFingerprintKeepsAttributesWhenAnOptionalCallFails(t *testing.T) {
	for _, fl := range []Flavor{{}, {Name: "podman", Podman: true}} {
		t.Run(fl.name(), func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "engine.sock")
			pc := DefaultPluginConfig()
			pc.Endpoint = "unix://" + sock
			d := New(Config{Plugin: pc, Flavor: fl})
			var slow atomic.Bool
			defer fakeEngine(t, sock, &slow)()

			first := d.Fingerprint()
			if first.Health != drivers.HealthHealthy {
				t.Fatalf("fingerprint %+v", first)
			}
			slow.Store(true)
			second := d.Fingerprint()
			if second.Health != drivers.HealthHealthy || !maps.Equal(first.Attributes, second.Attributes) {
				t.Fatalf("info failed once: attributes changed\nbefore %v\nafter  %v", first.Attributes, second.Attributes)
			}
			slow.Store(false)
			if third := d.Fingerprint(); !maps.Equal(first.Attributes, third.Attributes) {
				t.Fatalf("info back: attributes changed\nbefore %v\nafter  %v", first.Attributes, third.Attributes)
			}
		})
	}
}

// The bridge IP is found on Docker 20.10, whose default bridge names only
// its subnet (no gateway): from the bridge's interface here, else the
// subnet's first host address. It was left out there.
func TestBridgeIP(t *testing.T) {
	noIface := func(string) (*net.Interface, error) { return nil, errors.New("no such interface") }
	lo := func(string) (*net.Interface, error) { return net.InterfaceByName("lo") }
	cases := []struct {
		name  string
		n     network.Inspect
		iface func(string) (*net.Interface, error)
		want  string
	}{
		{"gateway named", network.Inspect{IPAM: network.IPAM{Config: []network.IPAMConfig{{Subnet: "172.18.0.0/16", Gateway: "172.18.0.1"}}}}, noIface, "172.18.0.1"},
		{"docker 20.10 default bridge", network.Inspect{IPAM: network.IPAM{Config: []network.IPAMConfig{{Subnet: "172.17.0.0/16"}}},
			Options: map[string]string{"com.docker.network.bridge.name": "docker0"}}, noIface, "172.17.0.1"},
		{"the interface's own address", network.Inspect{IPAM: network.IPAM{Config: []network.IPAMConfig{{Subnet: "127.0.0.0/8"}}},
			Options: map[string]string{"com.docker.network.bridge.name": "lo"}}, lo, "127.0.0.1"},
		{"no IPv4 config", network.Inspect{IPAM: network.IPAM{Config: []network.IPAMConfig{{Subnet: "fd00::/64"}}}}, noIface, ""},
	}
	for _, c := range cases {
		if got := bridgeIP(c.n, c.iface); got != c.want {
			t.Errorf("%s: bridge IP %q, want %q", c.name, got, c.want)
		}
	}
}

// An engine that once does not answer a fingerprint in time stays healthy
// with its attributes; one that does not answer twice in a row is
// unhealthy and says why; one that answers again is healthy. On a loaded
// host podman's API sometimes took over 5 s, and each time the node went
// unhealthy and back (two registrations, no new podman work meanwhile).
func TestFingerprintToleratesOneSlowAnswer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "engine.sock")
	pc := DefaultPluginConfig()
	pc.Endpoint = "unix://" + sock
	d := New(Config{Plugin: pc})
	d.fingerprintTimeout = 300 * time.Millisecond
	var slow, hung atomic.Bool
	defer fakeEngine(t, sock, &slow, &hung)()

	first := d.Fingerprint()
	if first.Health != drivers.HealthHealthy {
		t.Fatalf("fingerprint %+v", first)
	}
	hung.Store(true)
	if fp := d.Fingerprint(); fp.Health != drivers.HealthHealthy || !maps.Equal(fp.Attributes, first.Attributes) {
		t.Fatalf("one slow answer: %+v", fp)
	}
	if fp := d.Fingerprint(); fp.Health != drivers.HealthUnhealthy || !strings.Contains(fp.HealthDescription, "deadline exceeded") {
		t.Fatalf("two slow answers in a row: %+v", fp)
	}
	hung.Store(false)
	if fp := d.Fingerprint(); fp.Health != drivers.HealthHealthy || !maps.Equal(fp.Attributes, first.Attributes) {
		t.Fatalf("answering again: %+v", fp)
	}
	// The count starts again after a healthy answer.
	hung.Store(true)
	if fp := d.Fingerprint(); fp.Health != drivers.HealthHealthy {
		t.Fatalf("one slow answer after recovering: %+v", fp)
	}
}
