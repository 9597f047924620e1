package docker

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/docker/docker/api/types/registry"
)

func TestRegistryHost(t *testing.T) {
	for ref, want := range map[string]string{
		"redis": "docker.io", "library/redis:7": "docker.io", "quay.io/org/app:1": "quay.io",
		"localhost/app": "localhost", "10.0.0.1:5000/app": "10.0.0.1:5000", "team/app": "docker.io",
	} {
		if got := registryHost(ref); got != want {
			t.Errorf("%s: %s, want %s", ref, got, want)
		}
	}
}

// Credentials come from the task's auth block first, then the plugin's
// auth.config file (auths, then its credential helpers), then auth.helper.
func TestRegistryAuthSources(t *testing.T) {
	dir := t.TempDir()
	helper := filepath.Join(dir, "docker-credential-drovertest")
	// The helper protocol: `get`, the server on stdin, JSON on stdout.
	if err := os.WriteFile(helper, []byte("#!/bin/sh\nread server\necho \"{\\\"Username\\\":\\\"h-$server\\\",\\\"Secret\\\":\\\"s3\\\"}\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	conf := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(map[string]any{
		"auths":       map[string]any{"quay.io": map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("qu:qp"))}},
		"credHelpers": map[string]string{"ghcr.io": "drovertest"},
	})
	if err := os.WriteFile(conf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	decode := func(s string) registry.AuthConfig {
		t.Helper()
		raw, err := base64.URLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		var ac registry.AuthConfig
		if err := json.Unmarshal(raw, &ac); err != nil {
			t.Fatal(err)
		}
		return ac
	}
	d := New(Config{Plugin: PluginConfig{AuthConfig: conf, AuthHelper: "drovertest"}})

	enc, err := d.registryAuth(&TaskConfig{Image: "quay.io/org/app", Auth: &Auth{Username: "task", Password: "tp"}})
	if ac := decode(enc); err != nil || ac.Username != "task" || ac.Password != "tp" {
		t.Fatalf("task auth: %+v %v", ac, err)
	}
	enc, err = d.registryAuth(&TaskConfig{Image: "quay.io/org/app"})
	if ac := decode(enc); err != nil || ac.Username != "qu" || ac.Password != "qp" || ac.ServerAddress != "quay.io" {
		t.Fatalf("config file auths: %+v %v", ac, err)
	}
	enc, err = d.registryAuth(&TaskConfig{Image: "ghcr.io/org/app"})
	if ac := decode(enc); err != nil || ac.Username != "h-ghcr.io" || ac.Password != "s3" {
		t.Fatalf("config file credHelpers: %+v %v", ac, err)
	}
	enc, err = d.registryAuth(&TaskConfig{Image: "registry.example:5000/app"})
	if ac := decode(enc); err != nil || ac.Username != "h-registry.example:5000" {
		t.Fatalf("auth.helper: %+v %v", ac, err)
	}
	if enc, err := New(Config{}).registryAuth(&TaskConfig{Image: "redis"}); err != nil || enc != "" {
		t.Fatalf("no credentials: %q %v", enc, err)
	}
	if _, err := New(Config{Plugin: PluginConfig{AuthHelper: "missing-helper"}}).registryAuth(&TaskConfig{Image: "redis"}); err == nil {
		t.Fatal("a missing helper was not an error")
	}
}
