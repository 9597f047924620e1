package httpapi

import (
	"strings"
	"testing"
)

// A path with an extra segment after an ACL object's name or ID names no
// object (names and IDs never hold a "/"): Nomad looks the whole rest up
// and answers that kind's 404, except roles, whose path is split and
// answers 400 "invalid URI". No lookup is needed to know it.
func TestACLExtraPathSegment(t *testing.T) {
	env := newEnv(t, nil)
	seedACLReplies(env.rpc)
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/v1/acl/policy/a/b", 404, "ACL policy not found"},
		{"/v1/acl/token/a/b", 404, "ACL token not found"},
		{"/v1/acl/auth-method/a/b", 404, "ACL auth-method not found"},
		{"/v1/acl/binding-rule/a/b", 404, "ACL binding rule not found"},
		{"/v1/acl/role/a/b", 400, "invalid URI"},
		{"/v1/acl/role/name/r1/x", 400, "invalid URI"},
	} {
		code, _, body := env.raw(t, "GET", tc.path, "")
		if code != tc.code || strings.TrimSpace(body) != tc.body {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, code, body, tc.code, tc.body)
		}
	}
}
