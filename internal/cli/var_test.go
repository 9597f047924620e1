package cli

import (
	"testing"

	"github.com/hashicorp/nomad/api"
)

// var get -item prints the item's value as it is stored, with no newline
// added (Nomad: "ideal for piping to other processes"): a key or
// certificate written to a file with `var get -item key path > key.pem`
// gained a byte, and a value that ends without one (a token) did not
// round-trip.
func TestVarGetItemPrintsTheValueAsIs(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/var/app/tls": &api.Variable{Namespace: "default", Path: "app/tls", ModifyIndex: 7,
			Items: api.VariableItems{"key": "-----BEGIN KEY-----\nabc\n-----END KEY-----\n", "token": "s3cr3t"}},
	}}
	srv := f.server(t)
	for item, want := range map[string]string{
		"key":   "-----BEGIN KEY-----\nabc\n-----END KEY-----\n",
		"token": "s3cr3t",
	} {
		out, errb, code := run(t, srv, "var", "get", "-item", item, "app/tls")
		if code != 0 || out != want {
			t.Errorf("var get -item %s: exit %d, stdout %q (stderr %q), want exactly %q", item, code, out, errb, want)
		}
	}
}
