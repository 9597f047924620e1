package docker

import (
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every bad key or value is refused with the key named, as the servers
// show it at job submit.
func TestParseTaskConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		conf map[string]any
		want string
	}{
		{map[string]any{}, `"image" is required`},
		{map[string]any{"image": 5}, "image must be a string, got a number"},
		{map[string]any{"image": "x", "imgae": "y"}, `unknown key "imgae"`},
		{map[string]any{"image": "x", "ports": "http"}, "ports must be a list of strings"},
		{map[string]any{"image": "x", "args": []any{"a", 1}}, "args[1] must be a string"},
		{map[string]any{"image": "x", "force_pull": "maybe"}, "force_pull must be a boolean"},
		{map[string]any{"image": "x", "image_pull_timeout": "soon"}, "image_pull_timeout must be a duration"},
		{map[string]any{"image": "x", "ulimit": []map[string]any{{"nofile": "lots"}}}, `ulimit.nofile must be "soft" or "soft:hard"`},
		{map[string]any{"image": "x", "ulimit": []map[string]any{{"nofile": "20:10"}}}, "soft limit 20 is above the hard limit 10"},
		{map[string]any{"image": "x", "mount": []map[string]any{{"type": "nfs", "target": "/x"}}}, "mount[0].type must be bind, volume or tmpfs"},
		{map[string]any{"image": "x", "mount": []map[string]any{{"type": "bind", "target": "/x"}}}, "mount[0].source is required"},
		{map[string]any{"image": "x", "mount": []map[string]any{{"type": "tmpfs", "target": "/x", "tmpfs_options": []map[string]any{{"sise": 1}}}}}, `unknown key "sise" in mount[0].tmpfs_options`},
		{map[string]any{"image": "x", "auth": []map[string]any{{"user": "a"}}}, `unknown key "user" in auth`},
		{map[string]any{"image": "x", "auth": []map[string]any{{"username": "a"}, {"username": "b"}}}, "auth may be given only once"},
		{map[string]any{"image": "x", "logging": []map[string]any{{"type": "syslog"}}}, `logging.type "syslog" is not supported`},
		{map[string]any{"image": "x", "port_map": []map[string]any{{"http": 70000}}}, "port_map.http must be a port"},
		{map[string]any{"image": "x", "extra_hosts": []any{"nohost"}}, `extra_hosts[0] must be "host:ip"`},
		{map[string]any{"image": "x", "volumes": []any{"onlyone"}}, `volumes[0] must be "source:target"`},
		{map[string]any{"image": "x", "mac_address": "02:42:ac:11:00:02"}, "mac_address is not supported by Drover's docker driver yet"},
		{map[string]any{"image": "x", "devices": []map[string]any{{"container_path": "/dev/x"}}}, "devices[0].host_path is required"},
		{map[string]any{"image": "x", "shm_size": -1}, "shm_size must not be negative"},
	} {
		_, err := ParseTaskConfig(tc.conf)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "config: ") {
			t.Errorf("%v: error %v, want one containing %q", tc.conf, err, tc.want)
		}
	}
}

// Values as they arrive after JSON or msgpack (float64, int64, []any,
// interpolated strings) are accepted.
func TestParseTaskConfigWireTypes(t *testing.T) {
	tc, err := ParseTaskConfig(map[string]any{
		"image": "x", "shm_size": float64(1024), "pids_limit": int64(10), "cpu_cfs_period": "50000",
		"args": []string{"a"}, "force_pull": true, "image_pull_timeout": "30s", "init": "true",
		"labels": map[string]any{"n": 1.0}, "auth": map[string]any{"username": "u", "password": "p"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tc.ShmSize != 1024 || tc.PidsLimit != 10 || tc.CPUCFSPeriod != 50000 || tc.Args[0] != "a" || !tc.ForcePull ||
		tc.ImagePullTimeout != 30*time.Second || !tc.Init || tc.Labels["n"] != "1" || tc.Auth.Username != "u" {
		t.Fatalf("%+v", tc)
	}
	if tc, _ := ParseTaskConfig(map[string]any{"image": "x"}); tc.ImagePullTimeout != 5*time.Minute {
		t.Fatalf("default image_pull_timeout %s", tc.ImagePullTimeout)
	}
}

// The agent's plugin config: Nomad's keys and defaults; unknown or
// unimplemented keys refused by name.
func TestParsePluginConfig(t *testing.T) {
	c, err := ParsePluginConfig(map[string]any{
		"endpoint": "unix:///run/docker.sock", "allow_privileged": true,
		"volumes":               []map[string]any{{"enabled": true}},
		"gc":                    []map[string]any{{"image": false, "image_delay": "10m", "container": true}},
		"allow_caps":            []any{"CAP_NET_ADMIN", "chown"},
		"pull_activity_timeout": "5m", "extra_labels": []any{"job_name", "task_*"},
		"auth": []map[string]any{{"config": "/root/.docker/config.json"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoint != "unix:///run/docker.sock" || !c.AllowPrivileged || !c.VolumesEnabled || c.GCImage || c.GCImageDelay != 10*time.Minute ||
		!c.GCContainer || strings.Join(c.AllowCaps, ",") != "net_admin,chown" || c.PullActivityTimeout != 5*time.Minute || c.AuthConfig == "" {
		t.Fatalf("%+v", c)
	}
	if c, err := ParsePluginConfig(map[string]any{"logging": []map[string]any{{"type": "journald"}}}); err != nil || c.LoggingType != "journald" || c.LoggingConfig != nil {
		t.Fatalf("logging block without config keeps the json-file defaults: %+v %v", c, err)
	}
	d := DefaultPluginConfig()
	if !d.GCImage || d.GCImageDelay != 3*time.Minute || !d.GCContainer || d.VolumesEnabled || d.AllowPrivileged || d.PullActivityTimeout != 2*time.Minute {
		t.Fatalf("defaults %+v", d)
	}
	for _, tc := range []struct {
		conf map[string]any
		want string
	}{
		{map[string]any{"endpont": "x"}, `unknown key "endpont"`},
		{map[string]any{"volumes": []map[string]any{{"enable": true}}}, `unknown key "enable" in volumes`},
		{map[string]any{"gc": []map[string]any{{"dangling_containers": []map[string]any{{"enabled": true}}}}}, "gc.dangling_containers is not supported"},
		{map[string]any{"allow_privileged": "yes please"}, "allow_privileged must be a boolean"},
		{map[string]any{"pull_activity_timeout": "10s"}, "pull_activity_timeout must be at least 1m"},
		{map[string]any{"infra_image": "pause"}, "infra_image is not supported"},
	} {
		if _, err := ParsePluginConfig(tc.conf); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.conf, err, tc.want)
		}
	}
}

// Without an engine (never seen) the fingerprint says the driver is not
// detected, with the reason (TestFingerprintFollowsEngine covers an engine
// that goes away).
func TestFingerprintWithoutEngine(t *testing.T) {
	pc := DefaultPluginConfig()
	pc.Endpoint = "unix://" + t.TempDir() + "/docker.sock"
	d := New(Config{Plugin: pc})
	fp := d.Fingerprint()
	if fp.Health != "undetected" || len(fp.Attributes) != 0 || !strings.Contains(fp.HealthDescription, "Failed to connect to docker daemon at unix://") {
		t.Fatalf("%+v", fp)
	}
}

// A log FIFO nobody reads (no collector) is an error at once, not a
// goroutine blocked in open forever.
func TestOpenFifoWithoutReader(t *testing.T) {
	p := t.TempDir() + "/out.fifo"
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		w, err := openFifo(p)
		if err == nil {
			w.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no log collector") {
			t.Fatalf("want an error naming the missing reader, got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("openFifo blocked on a FIFO without a reader")
	}
}

// After a client restart the task may be recovered before its log
// collector opens the FIFO: the driver waits for the reader instead of
// dropping the output.
func TestOpenLogWaitsForReader(t *testing.T) {
	p := t.TempDir() + "/out.fifo"
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	h := &taskHandle{ctx: context.Background()}
	done := make(chan error, 1)
	go func() {
		w, err := h.openLog(p)
		if err == nil {
			_, err = w.Write([]byte("late\n"))
			w.Close()
		}
		done <- err
	}()
	r, err := os.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("openLog: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("openLog never saw the reader")
	}
	b, _ := io.ReadAll(r)
	if string(b) != "late\n" {
		t.Fatalf("read %q", b)
	}
}
