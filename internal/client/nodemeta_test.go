package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/structs"
)

// Applying dynamic meta changes the node the servers hold before the call
// answers: new keys appear, a null removes a configured key, the static
// meta is untouched, and the computed class follows.
func TestClient_ApplyNodeMetaReachesServerAtOnce(t *testing.T) {
	tc := newTestClient(t, func(c *Config) { c.Meta = map[string]string{"rack": "r1", "zone": "z1"} })
	tc.waitReady(t)
	before := tc.srv.node(tc.NodeID())
	if before.Meta["rack"] != "r1" || before.Meta["connect.log_level"] != "info" {
		t.Fatalf("registered meta lacks the static keys: %v", before.Meta)
	}

	resp, err := tc.ApplyNodeMeta(map[string]*string{"gpu": new("a100"), "rack": nil})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Meta["gpu"] != "a100" || resp.Meta["zone"] != "z1" {
		t.Fatalf("merged meta: %v", resp.Meta)
	}
	if _, ok := resp.Meta["rack"]; ok {
		t.Fatalf("unset key still in the merged meta: %v", resp.Meta)
	}
	if v, ok := resp.Dynamic["rack"]; !ok || v != nil || resp.Dynamic["gpu"] == nil || *resp.Dynamic["gpu"] != "a100" {
		t.Fatalf("dynamic meta: %v", resp.Dynamic)
	}
	if resp.Static["rack"] != "r1" || resp.Static["zone"] != "z1" {
		t.Fatalf("static meta changed: %v", resp.Static)
	}
	// No polling: the server had the new node when the call answered.
	after := tc.srv.node(tc.NodeID())
	if after.Meta["gpu"] != "a100" || after.Meta["rack"] != "" || after.Meta["zone"] != "z1" {
		t.Fatalf("server's node meta after apply: %v", after.Meta)
	}
	if after.Status != structs.NodeStatusReady {
		t.Fatalf("re-registering for meta changed the status to %q", after.Status)
	}
	want := after.Copy()
	want.ComputeClass()
	if after.ComputedClass == before.ComputedClass || after.ComputedClass != want.ComputedClass {
		t.Fatalf("computed class %s -> %s, want %s", before.ComputedClass, after.ComputedClass, want.ComputedClass)
	}

	// A later apply sets a key again and keeps the earlier changes.
	resp, err = tc.ApplyNodeMeta(map[string]*string{"rack": new("r9")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Meta["rack"] != "r9" || resp.Meta["gpu"] != "a100" || tc.srv.node(tc.NodeID()).Meta["rack"] != "r9" {
		t.Fatalf("second apply: %v / server %v", resp.Meta, tc.srv.node(tc.NodeID()).Meta)
	}
}

// A node update that fails is retried by the registration loop: the apply
// still succeeds (the change is the client's) and the servers get it.
func TestClient_ApplyNodeMetaRetriesFailedUpdate(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	tc.srv.mu.Lock()
	tc.srv.failNext["Node.Register"] = 1
	tc.srv.mu.Unlock()
	if _, err := tc.ApplyNodeMeta(map[string]*string{"k": new("v")}); err != nil {
		t.Fatal(err)
	}
	waitServerMeta(t, tc, "k", "v")
}

func waitServerMeta(t *testing.T, tc *testClient, k, v string) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() error {
		if n := tc.srv.node(tc.NodeID()); n == nil || n.Meta[k] != v {
			return testutil.Errorf("server's node meta %v, want %s=%s", n.Meta, k, v)
		}
		return nil
	})
}

func TestClient_ApplyNodeMetaRefusesBadKeys(t *testing.T) {
	tc := newTestClient(t, nil)
	for _, tt := range []struct {
		meta map[string]*string
		want string
	}{
		{nil, "missing Meta"},
		{map[string]*string{"": new("x")}, `invalid Meta key ""`},
		{map[string]*string{"ok": new("x"), "has space": new("x")}, `invalid Meta key "has space"`},
		{map[string]*string{"a..b": new("x")}, `invalid Meta key "a..b"`},
		{map[string]*string{"1abc": new("x")}, `invalid Meta key "1abc"`},
		{map[string]*string{"rack.$x": nil}, `invalid Meta key "rack.$x"`},
	} {
		_, err := tc.ApplyNodeMeta(tt.meta)
		if code, msg := structs.ErrorCode(errOrNil(err)); code != 400 || !strings.Contains(msg, tt.want) {
			t.Errorf("%v: %d %q, want 400 %q", tt.meta, code, msg, tt.want)
		}
	}
	if m := tc.NodeMeta(); len(m.Dynamic) != 0 {
		t.Fatalf("a refused apply changed the meta: %v", m.Dynamic)
	}
	// Dotted identifiers with dashes and underscores are fine.
	if _, err := tc.ApplyNodeMeta(map[string]*string{"team-a.gpu_count": new("2")}); err != nil {
		t.Fatal(err)
	}
}

func errOrNil(err error) error {
	if err == nil {
		return errors.New("no error")
	}
	return err
}

// The dynamic meta survives a client restart (not in dev mode), set keys
// and unset ones alike, and a configured value changed meanwhile stays
// overridden by the dynamic one.
func TestClient_NodeMetaPersistsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	first := newTestClient(t, func(c *Config) {
		c.DevMode, c.DataDir, c.Meta = false, dir, map[string]string{"rack": "r1", "zone": "z1"}
	})
	first.waitReady(t)
	if _, err := first.ApplyNodeMeta(map[string]*string{"gpu": new("a100"), "rack": nil, "zone": new("z2")}); err != nil {
		t.Fatal(err)
	}
	first.Shutdown()

	second := newTestClient(t, func(c *Config) {
		c.DevMode, c.DataDir, c.Meta = false, dir, map[string]string{"rack": "r1", "zone": "z3"}
	})
	m := second.Node().Meta
	if _, ok := m["rack"]; ok || m["gpu"] != "a100" || m["zone"] != "z2" || m["connect.log_level"] != "info" {
		t.Fatalf("meta after restart: %v", m)
	}
	if r := second.NodeMeta(); r.Static["zone"] != "z3" || r.Static["rack"] != "r1" {
		t.Fatalf("static meta after restart: %v", r.Static)
	}
	second.waitReady(t)
	if n := second.srv.node(second.NodeID()); n.Meta["gpu"] != "a100" {
		t.Fatalf("registered after restart without the dynamic meta: %v", n.Meta)
	}

	// A file that is not the meta stops the client with a message naming it.
	p := filepath.Join(dir, "client", nodeMetaFile)
	if err := os.WriteFile(p, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{DataDir: dir, RPC: newFakeServer()}); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("corrupt meta file: %v", err)
	}
}

// Dev mode keeps dynamic meta in memory only, like its node identity.
func TestClient_DevModeNodeMetaNotWritten(t *testing.T) {
	dir := t.TempDir()
	tc := newTestClient(t, func(c *Config) { c.DataDir = dir })
	if _, err := tc.ApplyNodeMeta(map[string]*string{"k": new("v")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "client", nodeMetaFile)); !os.IsNotExist(err) {
		t.Fatalf("dev mode wrote the meta file: %v", err)
	}
}
