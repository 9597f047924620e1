package acl

import (
	"strings"
	"testing"
)

func mustACL(t *testing.T, rules ...string) *ACL {
	t.Helper()
	var ps []*Policy
	for _, r := range rules {
		p, err := Parse(r)
		if err != nil {
			t.Fatalf("Parse(%q): %v", r, err)
		}
		ps = append(ps, p)
	}
	return NewACL(false, ps)
}

func TestParse_Errors(t *testing.T) {
	for _, tc := range []struct{ rules, want string }{
		{``, "empty"},
		{`namespace "default" { policy = "admin" }`, `invalid namespace policy "admin"`},
		{`namespace "default" { capabilities = ["fly"] }`, `invalid namespace capability "fly"`},
		{`namespace "a b" { policy = "read" }`, `invalid namespace name`},
		{`node { policy = "scale" }`, `invalid node policy "scale"`},
		{`agent { policy = "list" }`, `invalid agent policy`},
		{`plugin { policy = "write" }`, `invalid plugin policy`},
		{`node_pool "p" { capabilities = ["mount"] }`, `invalid node pool capability`},
		{`namespace "x" { variables { path "a/*" { capabilities = ["own"] } } }`, `invalid variable capability "own"`},
		{`namespace "x" {`, "failed to parse"},
		// Misspelt keys were ignored: the policy was stored granting less
		// (or nothing) than written. The error names the key and its line.
		{"nodes {\n  policy = \"read\"\n}", `line 1: unknown block "nodes"`},
		{"namespace \"default\" {\n  polcy = \"read\"\n}", `line 2: unknown key "polcy" in namespace "default"`},
		{"namespace \"d\" {\n  variables {\n    path \"a/*\" {\n      capabilites = [\"read\"]\n    }\n  }\n}",
			`line 4: unknown key "capabilites" in path "a/*" in variables in namespace "d"`},
		{"node_pool \"p\" {\n  policy = \"read\"\n  capability = [\"read\"]\n}", `line 3: unknown key "capability" in node_pool "p"`},
		{`operator { policy = "read" capabilities = ["snapshot-save"] }`, `unknown key "capabilities" in operator`},
		{`{"namespace": {"default": {"polcy": "read"}}}`, `unknown key "polcy" in namespace "default"`},
		{`namespace "a" "b" { policy = "read" }`, `namespace takes 1 label(s), got 2`},
	} {
		_, err := ParseForWrite(tc.rules)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseForWrite(%q) = %v, want %q", tc.rules, err, tc.want)
		}
	}
}

func TestNamespaceShorthandsAndCapabilities(t *testing.T) {
	a := mustACL(t, `
namespace "default" { policy = "read" }
namespace "dev" {
  policy = "write"
  variables { path "app/*" { capabilities = ["read"] } }
}
namespace "ops" { capabilities = ["submit-job", "read-logs"] }
namespace "scaler" { policy = "scale" }
`)
	for _, tc := range []struct {
		ns, op string
		want   bool
	}{
		{"default", NamespaceCapabilityReadJob, true},
		{"default", NamespaceCapabilityListJobs, true},
		{"default", NamespaceCapabilitySubmitJob, false},
		{"dev", NamespaceCapabilitySubmitJob, true},
		{"dev", NamespaceCapabilityAllocExec, true},
		{"dev", NamespaceCapabilityAllocNodeExec, false},
		{"ops", NamespaceCapabilitySubmitJob, true},
		{"ops", NamespaceCapabilityReadJob, false},
		{"scaler", NamespaceCapabilityScaleJob, true},
		{"scaler", NamespaceCapabilitySubmitJob, false},
		{"other", NamespaceCapabilityReadJob, false},
	} {
		if got := a.AllowNamespaceOperation(tc.ns, tc.op); got != tc.want {
			t.Errorf("%s/%s = %v, want %v", tc.ns, tc.op, got, tc.want)
		}
	}
}

// Exact names beat globs; among globs the one with the most literal
// characters wins; deny in a merged block wins.
func TestNamespaceGlobPrecedence(t *testing.T) {
	a := mustACL(t, `
namespace "*" { policy = "read" }
namespace "team-*" { policy = "write" }
namespace "team-secret-*" { policy = "deny" }
namespace "team-secret-open" { policy = "read" }
`, `namespace "prod" { policy = "write" }`, `namespace "prod" { policy = "deny" }`)
	for _, tc := range []struct {
		ns, op string
		want   bool
	}{
		{"anything", NamespaceCapabilityReadJob, true},
		{"anything", NamespaceCapabilitySubmitJob, false},
		{"team-a", NamespaceCapabilitySubmitJob, true},
		{"team-secret-x", NamespaceCapabilityReadJob, false},
		{"team-secret-open", NamespaceCapabilityReadJob, true},
		{"team-secret-open", NamespaceCapabilitySubmitJob, false},
		{"prod", NamespaceCapabilityReadJob, false},
	} {
		if got := a.AllowNamespaceOperation(tc.ns, tc.op); got != tc.want {
			t.Errorf("%s/%s = %v, want %v", tc.ns, tc.op, got, tc.want)
		}
	}
	if !a.AllowNamespace("anything") || a.AllowNamespace("team-secret-x") {
		t.Error("AllowNamespace does not follow the same precedence")
	}
}

func TestSimpleBlocksMerge(t *testing.T) {
	a := mustACL(t, `node { policy = "read" }
agent { policy = "write" }
operator { policy = "read" }`, `node { policy = "write" }`)
	if !a.AllowNodeWrite() || !a.AllowAgentRead() || !a.AllowAgentWrite() || !a.AllowOperatorRead() || a.AllowOperatorWrite() {
		t.Fatalf("merged levels wrong: %+v", a)
	}
	d := mustACL(t, `node { policy = "write" }`, `node { policy = "deny" }`)
	if d.AllowNodeRead() {
		t.Fatal("deny did not win")
	}
	var none *ACL
	if none.AllowNodeRead() || none.AllowNamespaceOperation("default", NamespaceCapabilityReadJob) || none.IsManagement() {
		t.Fatal("a nil ACL allowed something")
	}
	if !ManagementACL.AllowOperatorWrite() || !ManagementACL.AllowNamespaceOperation("x", NamespaceCapabilityAllocNodeExec) {
		t.Fatal("management refused")
	}
}

func TestNodePoolAndHostVolumeRules(t *testing.T) {
	a := mustACL(t, `node_pool "prod-*" { policy = "read" }
node_pool "dev" { policy = "write" }
host_volume "shared" { policy = "write" }
host_volume "*" { policy = "read" }`)
	if !a.AllowNodePoolOperation("prod-1", "read") || a.AllowNodePoolOperation("prod-1", "write") || !a.AllowNodePoolOperation("dev", "delete") {
		t.Fatal("node pool rules wrong")
	}
	if !a.AllowHostVolumeOperation("shared", "mount-readwrite") || a.AllowHostVolumeOperation("data", "mount-readwrite") || !a.AllowHostVolumeOperation("data", "mount-readonly") {
		t.Fatal("host volume rules wrong")
	}
}

// Nomad's host volume capabilities imply the weaker ones: write implies
// register, create, delete and read; register implies create and read;
// create implies read. Nothing implies write.
func TestHostVolumeCapabilitiesImplied(t *testing.T) {
	a := mustACL(t, `
namespace "w" { capabilities = ["host-volume-write"] }
namespace "r" { capabilities = ["host-volume-register"] }
namespace "c" { capabilities = ["host-volume-create"] }
namespace "d" { capabilities = ["host-volume-delete"] }
namespace "g-*" { capabilities = ["host-volume-register"] }
`)
	all := []string{NamespaceCapabilityHostVolumeWrite, NamespaceCapabilityHostVolumeRegister,
		NamespaceCapabilityHostVolumeCreate, NamespaceCapabilityHostVolumeDelete, NamespaceCapabilityHostVolumeRead}
	for _, tc := range []struct {
		ns   string
		want []string
	}{
		{"w", all},
		{"r", []string{NamespaceCapabilityHostVolumeRegister, NamespaceCapabilityHostVolumeCreate, NamespaceCapabilityHostVolumeRead}},
		{"g-1", []string{NamespaceCapabilityHostVolumeRegister, NamespaceCapabilityHostVolumeCreate, NamespaceCapabilityHostVolumeRead}},
		{"c", []string{NamespaceCapabilityHostVolumeCreate, NamespaceCapabilityHostVolumeRead}},
		{"d", []string{NamespaceCapabilityHostVolumeDelete}},
	} {
		for _, op := range all {
			want := false
			for _, w := range tc.want {
				want = want || w == op
			}
			if got := a.AllowNamespaceOperation(tc.ns, op); got != want {
				t.Errorf("%s/%s = %v, want %v", tc.ns, op, got, want)
			}
		}
	}
}

// Every rule kind of the language parses, in HCL and in its JSON form.
func TestParse_EveryRuleKind(t *testing.T) {
	for _, rules := range []string{`
namespace "default" {
  policy = "read"
  capabilities = ["submit-job", "alloc-exec"]
  variables {
    path "project/*" { capabilities = ["read", "write", "list"] }
    path "shared/*" { capabilities = ["read"] }
  }
}
namespace "team-*" { policy = "write" }
node_pool "prod" { policy = "read" }
node_pool "dev" { capabilities = ["read", "write"] }
host_volume "data*" { capabilities = ["mount-readonly"] }
agent { policy = "read" }
node { policy = "read" }
operator { policy = "read" }
quota { policy = "read" }
plugin { policy = "list" }
`, `{
  "namespace": {
    "default": {"policy": "read", "variables": {"path": {"a/*": {"capabilities": ["read"]}}}},
    "other": {"capabilities": ["list-jobs"]}
  },
  "node_pool": [{"prod": {"policy": "read"}}],
  "node": {"policy": "write"}
}`} {
		p, err := ParseForWrite(rules)
		if err != nil {
			t.Fatalf("ParseForWrite: %v\n%s", err, rules)
		}
		if len(p.Namespaces) < 2 || len(p.NodePools) < 1 || p.Node == nil {
			t.Fatalf("parsed %+v", p)
		}
	}
}

// A stored policy is read leniently: one written before unknown keys were
// refused keeps granting what it can.
func TestParse_StoredPolicyWithUnknownKeyStillCompiles(t *testing.T) {
	a := mustACL(t, "namespace \"default\" {\n  policy = \"read\"\n  polcy = \"write\"\n}\n")
	if !a.AllowNamespaceOperation("default", NamespaceCapabilityReadJob) || a.AllowNamespaceOperation("default", NamespaceCapabilitySubmitJob) {
		t.Fatal("a stored policy with an unknown key does not grant what it says")
	}
}
