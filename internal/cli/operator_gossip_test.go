package cli

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// Nomad's gossip keyring commands are subcommands (`operator gossip
// keyring generate|list|install|use|remove`, and `operator keygen`), as
// its documentation and operators' scripts spell them; each did nothing
// but print "This command takes no arguments" here. The flag forms still
// work, and the bare command lists the subcommands.
func TestOperatorGossipKeyringSubcommands(t *testing.T) {
	for _, args := range [][]string{{"operator", "gossip", "keyring", "generate"}, {"operator", "keygen"}} {
		out, errb, code := run(t, nil, args...)
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
		if code != 0 || err != nil || len(key) != 32 {
			t.Fatalf("%v: code %d, %q %q", args, code, out, errb)
		}
	}
	const key = "gJcCZ10fG8j2aXEW4zmowSgaZjbN/S709XuRxW1u4NE="
	f := &fake{routes: map[string]any{
		"GET /v1/agent/keyring/list":    &api.KeyringResponse{Keys: map[string]int{key: 3}, NumNodes: 3},
		"PUT /v1/agent/keyring/install": &api.KeyringResponse{},
		"PUT /v1/agent/keyring/use":     &api.KeyringResponse{},
		"PUT /v1/agent/keyring/remove":  &api.KeyringResponse{},
	}}
	srv := f.server(t)
	addr := "-address=" + srv.URL // after the four-word verb (run places it after three)
	out, errb, code := run(t, nil, "operator", "gossip", "keyring", "list", addr)
	if code != 0 || !strings.Contains(out, key) || !strings.Contains(out, "3/3") {
		t.Fatalf("list: code %d, %q %q", code, out, errb)
	}
	for _, verb := range []string{"install", "use", "remove"} {
		out, errb, code := run(t, nil, "operator", "gossip", "keyring", verb, addr, key)
		if code != 0 || !strings.Contains(out, "Done!") {
			t.Fatalf("%s: code %d, %q %q", verb, code, out, errb)
		}
		if got := f.seen[len(f.seen)-1]; got != "PUT /v1/agent/keyring/"+verb+"?" {
			t.Fatalf("%s: request %q", verb, got)
		}
		if _, errb, code := run(t, nil, "operator", "gossip", "keyring", verb, addr); code != 1 || !strings.Contains(errb, "This command takes one argument: <key>") {
			t.Fatalf("%s without a key: code %d, %q", verb, code, errb)
		}
	}
	if out, _, code := run(t, srv, "operator", "gossip", "keyring", "-list"); code != 0 || !strings.Contains(out, key) {
		t.Fatalf("-list: code %d, %q", code, out)
	}
	out, errb, code = run(t, nil, "operator", "gossip", "keyring")
	if code != 1 || !strings.Contains(out+errb, "generate") || !strings.Contains(out+errb, "install") {
		t.Fatalf("bare keyring: code %d, %q %q", code, out, errb)
	}
}
