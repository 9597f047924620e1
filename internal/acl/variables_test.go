package acl

import "testing"

func TestVariablePathRules(t *testing.T) {
	a := mustACL(t, `
namespace "default" {
  variables {
    path "app/*"        { capabilities = ["read", "list"] }
    path "app/secret/*" { capabilities = ["deny"] }
    path "app/db"       { capabilities = ["write", "read", "destroy"] }
  }
}
namespace "dev" { policy = "write" }
namespace "ro-*" { policy = "read" }
`)
	for _, tc := range []struct {
		ns, path, op string
		want         bool
	}{
		{"default", "app/web", "read", true},
		{"default", "app/web", "list", true},
		{"default", "app/web", "write", false},
		{"default", "app/secret/x", "read", false}, // the more specific glob denies
		{"default", "app/db", "write", true},       // the exact path wins over the glob
		{"default", "app/db", "list", false},
		{"default", "other", "read", false},
		{"dev", "anything/at/all", "destroy", true}, // policy = write grants every path
		{"ro-1", "x", "read", true},
		{"ro-1", "x", "write", false},
		{"prod", "x", "read", false},
	} {
		if got := a.AllowVariableOperation(tc.ns, tc.path, tc.op); got != tc.want {
			t.Errorf("%s %s@%s = %v, want %v", tc.op, tc.path, tc.ns, got, tc.want)
		}
	}
	if !ManagementACL.AllowVariableOperation("any", "nomad/jobs/x", "destroy") {
		t.Error("management refused")
	}
	var none *ACL
	if none.AllowVariableOperation("default", "a", "read") {
		t.Error("a nil ACL allowed a read")
	}
}
