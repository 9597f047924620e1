package podman

import (
	"strings"
	"testing"
	"time"
)

func TestParseTaskConfigMapsUpstreamKeys(t *testing.T) {
	tc, err := ParseTaskConfig(map[string]any{
		"image": "docker://docker.io/library/redis:7", "working_dir": "/srv", "userns": "keep-id",
		"entrypoint": "/bin/sh", "shm_size": "64m", "auth": []map[string]any{{"username": "u", "password": "p"}},
		"ports": []any{"db"}, "cap_drop": []any{"all"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tc.Image != "docker.io/library/redis:7" || tc.WorkDir != "/srv" || tc.UsernsMode != "keep-id" ||
		len(tc.Entrypoint) != 1 || tc.Entrypoint[0] != "/bin/sh" || tc.ShmSize != 64<<20 ||
		tc.Auth == nil || tc.Auth.Username != "u" || len(tc.Ports) != 1 {
		t.Fatalf("parsed %+v", tc)
	}
	tc, err = ParseTaskConfig(map[string]any{"image": "docker-archive:local/app.tar"})
	if err != nil || !tc.ImageFromLoad || tc.Load != "local/app.tar" || tc.Image != "" {
		t.Fatalf("archive image: %+v %v", tc, err)
	}
	for _, c := range []struct {
		conf map[string]any
		want string
	}{
		{map[string]any{"command": "x"}, `"image" is required`},
		{map[string]any{"image": "docker-archive:"}, "needs the tarball's path"},
		{map[string]any{"image": "redis", "tmpfs": []any{"/x"}}, "tmpfs is not supported by Drover's podman driver yet"},
		{map[string]any{"image": "redis", "auth": []map[string]any{{"tls_verify": false}}}, "auth.tls_verify = false is not supported"},
		{map[string]any{"image": "redis", "bogus": 1}, `unknown key "bogus"`},
	} {
		if _, err := ParseTaskConfig(c.conf); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "config: ") {
			t.Errorf("%v: error %v, want %q", c.conf, err, c.want)
		}
	}
}

func TestParsePluginConfig(t *testing.T) {
	c, err := ParsePluginConfig(map[string]any{})
	if err != nil || c.Endpoint != DefaultSocket || !c.VolumesEnabled || !c.GCContainer || c.GCImage || c.AllowPrivileged ||
		c.FingerprintTimeout != time.Minute {
		t.Fatalf("defaults %+v %v", c, err)
	}
	if c, err := ParsePluginConfig(map[string]any{"client_http_timeout": "90s"}); err != nil || c.FingerprintTimeout != 90*time.Second {
		t.Fatalf("client_http_timeout: %+v %v", c, err)
	}
	c, err = ParsePluginConfig(map[string]any{
		"socket_path": "/run/user/1000/podman/podman.sock", "volumes": []map[string]any{{"enabled": false}},
		"gc": []map[string]any{{"container": false}}, "allow_privileged": true, "extra_labels": []any{"job_name"},
	})
	if err != nil || c.Endpoint != "unix:///run/user/1000/podman/podman.sock" || c.VolumesEnabled || c.GCContainer || !c.AllowPrivileged {
		t.Fatalf("parsed %+v %v", c, err)
	}
	for _, bad := range []struct {
		m    map[string]any
		want string
	}{
		{map[string]any{"gc": []map[string]any{{"image": true}}}, `unknown key "image" in gc`},
		{map[string]any{"recover_stopped": true}, "recover_stopped is not supported"},
		{map[string]any{"endpoint": "x"}, `unknown key "endpoint"`},
		{map[string]any{"socket_path": 3}, "socket_path must be a socket URL"},
		{map[string]any{"client_http_timeout": "soon"}, "client_http_timeout must be a positive duration"},
		{map[string]any{"client_http_timeout": "-1s"}, "client_http_timeout must be a positive duration"},
	} {
		if _, err := ParsePluginConfig(bad.m); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: error %v, want %q", bad.m, err, bad.want)
		}
	}
}
