package cli

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// An ACL verb whose -t template fails says so and exits 1, as every other
// read verb (and Nomad) does; it used to print the error and exit 0.
func TestACLTemplateErrorExits1(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/acl/policies":   []*api.ACLPolicyListStub{{Name: "p1"}},
		"GET /v1/acl/token/self": &api.ACLToken{AccessorID: "a1", Name: "me"},
	}}
	srv := f.server(t)
	for _, args := range [][]string{
		{"acl", "policy", "list", "-t", "{{.Nope}}"},
		{"acl", "token", "self", "-t", "{{"},
	} {
		out, errb, code := run(t, srv, args...)
		if code != 1 || !strings.Contains(errb, "Error") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and the template error", args, code, out, errb)
		}
	}
	// A good template still exits 0.
	if out, errb, code := run(t, srv, "acl", "policy", "list", "-t", "{{range .}}{{.Name}}{{end}}"); code != 0 || out != "p1\n" {
		t.Errorf("good template: exit %d, stdout %q, stderr %q", code, out, errb)
	}
}
