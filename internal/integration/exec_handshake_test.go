package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
	"github.com/hashicorp/nomad/api"
)

// wsHandshakeExec runs command in alloc's task "t" through agent a with
// Nomad's ws_handshake protocol (the token in the first message, as the
// web UI sends it) and returns its exit code, or the close error.
func wsHandshakeExec(t *testing.T, a *agent, allocID, token string, command ...string) (int, error) {
	t.Helper()
	cmd := `["` + strings.Join(command, `","`) + `"]`
	q := url.Values{"task": {"t"}, "command": {cmd}, "ws_handshake": {"true"}}
	u := "ws" + strings.TrimPrefix(a.url("/v1/client/allocation/"+allocID+"/exec?"+q.Encode()), "http")
	conn, resp, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatalf("dial %s: %v (%+v)", u, err, resp)
	}
	defer conn.Close()
	if err := conn.WriteJSON(map[string]any{"version": 1, "auth_token": token}); err != nil {
		t.Fatal(err)
	}
	conn.WriteJSON(api.ExecStreamingInput{Stdin: &api.ExecStreamingIOOperation{Close: true}})
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var f api.ExecStreamingOutput
		if err := conn.ReadJSON(&f); err != nil {
			return -1, err
		}
		if f.Exited && f.Result != nil {
			return f.Result.ExitCode, nil
		}
	}
}

// With ACLs on a separate server and client, the UI's exec (token in the
// ws_handshake message) runs with an alloc-exec token, on the client agent
// and through the server relaying to it, and is refused without one. The
// request is judged in the allocation's own namespace, which the client
// agent looks up with its node's authority: a token holding only
// alloc-exec there (no read-job, so its own lookup would be refused)
// execs, and a token of another namespace is refused (it used to be
// judged in the request's namespace when its lookup was refused).
func TestACLExecWSHandshake(t *testing.T) {
	aclOn := map[string]any{"enabled": true}
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "acl": aclOn,
	})
	waitFor(t, 20*time.Second, "signing key", func() bool { return len(srv.jwksKeys()) > 0 })
	root, _, err := srv.client.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.client.SetSecretID(root.SecretID)
	cli := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}}, "acl": aclOn,
	})
	waitFor(t, 20*time.Second, "client node ready on the server", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	tokens := map[string]string{}
	for name, rules := range map[string]string{
		// raw_exec isolates no filesystem: as Nomad, an exec into it
		// needs alloc-node-exec besides alloc-exec.
		"exec":         `namespace "default" { capabilities = ["alloc-exec", "alloc-node-exec"] }`,
		"execOnly":     `namespace "default" { capabilities = ["alloc-exec"] }`,
		"read":         `namespace "default" { policy = "read" }`,
		"execTeam":     `namespace "team" { capabilities = ["alloc-exec", "alloc-node-exec", "read-logs", "read-fs"] }`,
		"writeDefault": `namespace "default" { policy = "write" capabilities = ["alloc-exec", "alloc-node-exec"] }`,
	} {
		if _, err := srv.client.ACLPolicies().Upsert(&api.ACLPolicy{Name: name, Rules: rules}, nil); err != nil {
			t.Fatal(err)
		}
		tok, _, err := srv.client.ACLTokens().Create(&api.ACLToken{Name: name, Type: "client", Policies: []string{name}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tokens[name] = tok.SecretID
	}
	if _, _, err := srv.client.Jobs().Register(rawExecJob("web", "service", 1, "sleep 300"), nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 30*time.Second, "web running", func() bool {
		allocs, _, err := srv.client.Jobs().Allocations("web", false, nil)
		if err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running" {
			allocID = allocs[0].ID
			return true
		}
		return false
	})
	if _, err := srv.client.Namespaces().Register(&api.Namespace{Name: "team"}, nil); err != nil {
		t.Fatal(err)
	}
	teamJob := rawExecJob("secret", "service", 1, "echo team-secret-output; sleep 300")
	teamJob.Namespace = new("team")
	if _, _, err := srv.client.Jobs().Register(teamJob, nil); err != nil {
		t.Fatal(err)
	}
	var teamAlloc string
	waitFor(t, 30*time.Second, "secret running in team", func() bool {
		allocs, _, err := srv.client.Jobs().Allocations("secret", false, &api.QueryOptions{Namespace: "team"})
		if err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running" {
			teamAlloc = allocs[0].ID
			return true
		}
		return false
	})
	for _, a := range []struct {
		name string
		ag   *agent
	}{{"client agent", cli}, {"server relaying", srv}} {
		if code, err := wsHandshakeExec(t, a.ag, teamAlloc, tokens["execTeam"], "sh", "-c", "exit 9"); err != nil || code != 9 {
			t.Errorf("%s, alloc-exec-only token of team: exit %d, %v; want 9", a.name, code, err)
		}
		code, err := wsHandshakeExec(t, a.ag, teamAlloc, tokens["writeDefault"], "sh", "-c", "exit 9")
		if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) || !strings.Contains(err.Error(), "Permission denied") {
			t.Errorf("%s, a default token into team's allocation: exit %d, %v; want a policy-violation close \"Permission denied\"", a.name, code, err)
		}
		for _, path := range []string{
			"/v1/client/fs/cat/" + teamAlloc + "?path=alloc/logs/t.stdout.0",
			"/v1/client/fs/logs/" + teamAlloc + "?task=t&type=stdout&plain=true",
			"/v1/client/fs/ls/" + teamAlloc,
		} {
			for tok, want := range map[string]int{tokens["writeDefault"]: 403, tokens["execTeam"]: 200} {
				req, _ := http.NewRequest("GET", a.ag.url(path), nil)
				req.Header.Set("X-Nomad-Token", tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("%s: GET %s: %d %s, want %d", a.name, path, resp.StatusCode, body, want)
				}
				if want == 403 && strings.Contains(string(body), "team-secret-output") {
					t.Errorf("%s: GET %s leaked the task's output to a default token", a.name, path)
				}
			}
		}
	}
	for _, a := range []struct {
		name string
		ag   *agent
	}{{"client agent", cli}, {"server relaying", srv}} {
		if code, err := wsHandshakeExec(t, a.ag, allocID, tokens["exec"], "sh", "-c", "exit 7"); err != nil || code != 7 {
			t.Errorf("%s, alloc-exec token: exit %d, %v; want 7", a.name, code, err)
		}
		for _, tok := range []string{tokens["execOnly"], tokens["read"], ""} {
			code, err := wsHandshakeExec(t, a.ag, allocID, tok, "sh", "-c", "exit 7")
			if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) || !strings.Contains(err.Error(), "Permission denied") {
				t.Errorf("%s, token %q: exit %d, %v; want a policy-violation close \"Permission denied\"", a.name, tok, code, err)
			}
		}
	}
}

// The web UI's exec terminal with ACLs on: with an alloc-exec token in
// its settings a command runs in the task; with a read-only one the
// terminal shows the refusal.
func TestUIExecWithACLs(t *testing.T) {
	b := newBrowser(t, 1280, 800)
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"acl": map[string]any{"enabled": true}})
	waitFor(t, 20*time.Second, "signing key", func() bool { return len(a.jwksKeys()) > 0 })
	root, _, err := a.client.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	a.client.SetSecretID(root.SecretID)
	a.waitReady(true)
	tokens := map[string]string{}
	for name, rules := range map[string]string{
		"exec": `namespace "default" { policy = "read" capabilities = ["alloc-exec", "alloc-node-exec"] }`,
		"read": `namespace "default" { policy = "read" }`,
	} {
		if _, err := a.client.ACLPolicies().Upsert(&api.ACLPolicy{Name: name, Rules: rules}, nil); err != nil {
			t.Fatal(err)
		}
		tok, _, err := a.client.ACLTokens().Create(&api.ACLToken{Name: name, Type: "client", Policies: []string{name}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tokens[name] = tok.SecretID
	}
	if _, _, err := a.client.Jobs().Register(rawExecJob("web", "service", 1, "sleep 300"), nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 30*time.Second, "web running", func() bool {
		allocs, _, err := a.client.Jobs().Allocations("web", false, nil)
		if err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running" {
			allocID = allocs[0].ID
			return true
		}
		return false
	})

	const wait = 30 * time.Second
	openExec := func(token string) {
		t.Helper()
		b.run("open the UI", wait, chromedp.Navigate(a.url("/ui/jobs")))
		evalJS[bool](b, `localStorage.setItem("drover.token", `+jsString(token)+`), true`)
		b.run("open the exec terminal", wait, chromedp.Navigate(a.url("/ui/allocations/"+allocID+"/t/exec")))
	}
	openExec(tokens["exec"])
	b.waitJS("the exec session", wait, `document.querySelector("#termstate") && /connected|closed/.test(document.querySelector("#termstate").innerText)`)
	evalJS[bool](b, `(() => { const t = document.querySelector("#term"); for (const k of [..."echo exec-$((6*7))", "Enter"]) t.dispatchEvent(new KeyboardEvent("keydown", {key: k, bubbles: true})); return true })()`)
	b.waitJS("the command's output", wait, `document.querySelector("#term").innerText.includes("exec-42")`)

	openExec(tokens["read"])
	b.waitJS("the refusal", wait, `document.querySelector("#termstate") && /closed/.test(document.querySelector("#termstate").innerText)`)
	if state := evalJS[string](b, `document.querySelector("#termstate").innerText`); !strings.Contains(state, "Permission denied") || !strings.Contains(state, "1008") {
		t.Fatalf("the terminal with a read-only token shows %q, want the refusal", state)
	}

	// Signed out, the jobs page says why it lists nothing.
	evalJS[bool](b, `localStorage.removeItem("drover.token"), true`)
	b.run("open the jobs page", wait, chromedp.Navigate(a.url("/ui/jobs")))
	b.waitJS("the sign-in hint", wait, `document.querySelector("#signin-hint") && document.querySelector("#signin-hint").innerText.includes("ACLs are enabled")`)

	// Sign in: a token that does not exist is refused with the reason and
	// not kept; the read-only token signs in (it may read no agent
	// endpoint) and the token page names it.
	signIn := func(secret string) {
		t.Helper()
		b.run("open the token page", wait, chromedp.Navigate(a.url("/ui/settings/tokens")))
		b.waitJS("the sign-in form", wait, `document.querySelector("#secret")`)
		evalJS[bool](b, `document.querySelector("#secret").value = `+jsString(secret)+`, document.querySelector("#tokform").requestSubmit(), true`)
	}
	signIn("00000000-0000-0000-0000-000000000000")
	b.waitJS("the refusal", wait, `document.querySelector("#tokres") && document.querySelector("#tokres").innerText.includes("ACL token not found")`)
	if tok := evalJS[string](b, `localStorage.getItem("drover.token") || ""`); tok != "" {
		t.Errorf("a refused token was kept: %q", tok)
	}
	signIn(tokens["read"])
	b.waitJS("the jobs page with web", wait, `location.pathname === "/ui/jobs" && document.querySelector('#jobrows tr[data-job="web"]')`)
	b.run("open the token page", wait, chromedp.Navigate(a.url("/ui/settings/tokens")))
	b.waitJS("the token's name and policy", wait, `document.querySelector("#tokinfo") && /Name\s+read/.test(document.querySelector("#tokinfo").innerText) && /Policies\s+read/.test(document.querySelector("#tokinfo").innerText)`)
	b.shot("token-read-only")

	// What the read-only token may not do is refused with the reason and
	// a way out, and the page stays usable.
	b.run("open the job", wait, chromedp.Navigate(a.url("/ui/jobs/web")))
	b.waitJS("the stop button", wait, `document.querySelector("#stopbtn")`)
	evalJS[bool](b, `window.confirm = () => true, document.querySelector("#stopbtn").click(), true`)
	b.waitJS("the refusal of stop", wait, `document.querySelector("#err .act-error") && document.querySelector("#err .act-error").innerText.includes("Permission denied") && document.querySelector('#err .act-error a[href="/ui/settings/tokens"]')`)
	b.waitJS("the job still shown", wait, `document.querySelector('#summary tr[data-group="g"]')`)
}
