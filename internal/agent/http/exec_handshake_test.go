package httpapi

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// handshakeTokens: alloc-exec in default, read-only in default, none.
func handshakeTokens(t *testing.T) matrixResolver {
	return matrixResolver{
		"":       compileRules(t),
		"exec":   compileRules(t, `namespace "default" { capabilities = ["alloc-exec"] }`),
		"nsread": compileRules(t, `namespace "default" { policy = "read" }`),
		"mgmt":   acl.ManagementACL,
	}
}

// handshakeSession dials a ws_handshake exec of "cat" on a1, sends the
// handshake with token, "ping\n" and stdin's close, and returns the exit
// code, or the close error that ended the socket before an exit frame.
func handshakeSession(t *testing.T, srv, token string, header map[string]string) (string, int, error) {
	t.Helper()
	q := url.Values{"task": {"web"}, "command": {`["cat"]`}, "ws_handshake": {"true"}}
	h := map[string][]string{}
	for k, v := range header {
		h[k] = []string{v}
	}
	conn, _, err := websocket.DefaultDialer.Dial(execURL(srv, q.Encode()), h)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.WriteJSON(wsHandshake{Version: 1, AuthToken: token})
	conn.WriteJSON(api.ExecStreamingInput{Stdin: &api.ExecStreamingIOOperation{Data: []byte("ping\n")}})
	conn.WriteJSON(api.ExecStreamingInput{Stdin: &api.ExecStreamingIOOperation{Close: true}})
	var stdout strings.Builder
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var f api.ExecStreamingOutput
		if err := conn.ReadJSON(&f); err != nil {
			return stdout.String(), -1, err
		}
		if f.Stdout != nil {
			stdout.Write(f.Stdout.Data)
		}
		if f.Exited && f.Result != nil {
			return stdout.String(), f.Result.ExitCode, nil
		}
	}
}

func checkHandshake(t *testing.T, srv string) {
	t.Helper()
	for _, tok := range []string{"exec", "mgmt"} {
		out, code, err := handshakeSession(t, srv, tok, nil)
		if err != nil || code != 3 || out != "ping\n" {
			t.Errorf("token %q: stdout %q exit %d err %v, want the command's output and exit code 3", tok, out, code, err)
		}
	}
	// The handshake's token is the one used, not a header's.
	if _, code, err := handshakeSession(t, srv, "exec", map[string]string{"X-Nomad-Token": "nsread"}); err != nil || code != 3 {
		t.Errorf("handshake token over a read-only header: exit %d err %v", code, err)
	}
	// Without a handshake token the header's is used.
	if _, code, err := handshakeSession(t, srv, "", map[string]string{"X-Nomad-Token": "exec"}); err != nil || code != 3 {
		t.Errorf("header token without a handshake token: exit %d err %v", code, err)
	}
	for _, tok := range []string{"nsread", "", "unknown-token"} {
		out, _, err := handshakeSession(t, srv, tok, nil)
		if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) || out != "" {
			t.Errorf("token %q: stdout %q err %v, want a policy-violation close and no output", tok, out, err)
			continue
		}
		if tok == "nsread" && err.(*websocket.CloseError).Text != "Permission denied" {
			t.Errorf("token %q refused with %q, want \"Permission denied\"", tok, err.(*websocket.CloseError).Text)
		}
	}
}

// With ACLs on, a browser's exec (token in the first message, none in the
// headers) runs with alloc-exec and is refused without it.
func TestExecWSHandshakeACL(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{Alloc: &structs.Allocation{ID: "a1", Namespace: "default"}})
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, Exec: fakeExec{}, Agent: &fakeAgent{serverOK: true},
		Auth: &ACLAuthorizer{Resolver: handshakeTokens(t), RPC: env.rpc}})
	checkHandshake(t, env.srv.URL)

	// Without ws_handshake the header decides before the upgrade, as before.
	q := url.Values{"task": {"web"}, "command": {`["cat"]`}}
	if _, resp, err := websocket.DefaultDialer.Dial(execURL(env.srv.URL, q.Encode()), nil); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("exec without a token or ws_handshake: %v", err)
	}
	// A first message that is not the handshake is refused.
	q.Set("ws_handshake", "true")
	conn, _, err := websocket.DefaultDialer.Dial(execURL(env.srv.URL, q.Encode()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.WriteJSON(map[string]any{"version": 2, "auth_token": "mgmt"})
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var f api.ExecStreamingOutput
	if err := conn.ReadJSON(&f); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) || !strings.Contains(err.Error(), "unsupported websocket protocol version 2") {
		t.Errorf("version 2 handshake: %v", err)
	}
}

// The same through a server agent relaying to the allocation's node: the
// node authorizes the token again.
func TestExecWSHandshakeRelayACL(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{Alloc: &structs.Allocation{ID: "a1", NodeID: "node-b", Namespace: "default"}})
	res := handshakeTokens(t)
	node := httptest.NewServer(NewHandler(Config{RPC: env.rpc, Exec: fakeExec{}, Stats: fakeStats{id: "node-b"},
		Allocs: allocSet{"a1": true}, Auth: &ACLAuthorizer{Resolver: res, RPC: env.rpc}}))
	defer node.Close()
	dialer := &tcpDialer{nodes: map[string]string{"node-b": node.Listener.Addr().String()}}
	// The server's resolver knows one more token than the node's: the
	// node refuses it, so the node enforces what it runs.
	srvRes := handshakeTokens(t)
	srvRes["server-only"] = srvRes["exec"]
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, Reach: dialer, Agent: &fakeAgent{serverOK: true},
		Auth: &ACLAuthorizer{Resolver: srvRes, RPC: env.rpc}})
	checkHandshake(t, env.srv.URL)
	if out, _, err := handshakeSession(t, env.srv.URL, "server-only", nil); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) || out != "" {
		t.Errorf("a token the node does not accept: stdout %q err %v, want the node's refusal", out, err)
	}
	dialer.mu.Lock()
	defer dialer.mu.Unlock()
	if dialer.dialled == 0 {
		t.Fatal("the server never relayed to the node")
	}
}
