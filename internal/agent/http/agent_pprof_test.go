package httpapi

import (
	"strings"
	"testing"
)

func TestAgentPprof(t *testing.T) {
	// Without ACLs the profiles need enable_debug.
	closed := newEnv(t, func(c *Config) { c.Auth = nil })
	if code, _, body := closed.raw(t, "GET", "/v1/agent/pprof/heap", ""); code != 403 || body != "Permission denied" {
		t.Fatalf("without enable_debug: %d %q", code, body)
	}
	env := newEnv(t, func(c *Config) { c.Auth = nil; c.EnableDebug = true })
	code, hdr, body := env.raw(t, "GET", "/v1/agent/pprof/heap", "")
	if code != 200 || hdr.Get("Content-Type") != "application/octet-stream" || len(body) == 0 {
		t.Fatalf("heap: %d %s (%d bytes)", code, hdr.Get("Content-Type"), len(body))
	}
	if code, _, body := env.raw(t, "GET", "/v1/agent/pprof/goroutine?debug=1", ""); code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Fatalf("goroutine debug=1: %d %.60q", code, body)
	}
	if code, _, _ := env.raw(t, "GET", "/v1/agent/pprof/profile?seconds=1", ""); code != 200 {
		t.Fatalf("cpu profile: %d", code)
	}
	if code, _, body := env.raw(t, "GET", "/v1/agent/pprof/nope", ""); code != 404 {
		t.Fatalf("unknown profile: %d %q", code, body)
	}
	if code, _, body := env.raw(t, "GET", "/v1/agent/pprof/heap?server_id=unknown.global", ""); code != 500 || body != "unknown Nomad server unknown.global" {
		t.Fatalf("unknown server: %d %q", code, body)
	}
	if code, _, body := env.raw(t, "GET", "/v1/agent/pprof/heap?seconds=x", ""); code != 400 {
		t.Fatalf("bad seconds: %d %q", code, body)
	}
}
