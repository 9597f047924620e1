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
	} {
		_, err := Parse(tc.rules)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.rules, err, tc.want)
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
