package integration

import (
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/nomad/api"
)

// visibleCaps is the script listing the capability-bound actions a person
// sees on the page (their labels), the navigation left out.
const visibleCaps = `[...document.querySelectorAll("main [data-cap]")].filter(e => e.offsetParent !== null).map(e => e.innerText.trim() || e.dataset.cap)`

// The UI offers only what the signed-in token may do, as Nomad's does: a
// read-only token sees no Stop, Scale, Restart, Exec, Drain or Run job
// anywhere; a token that may write in one namespace (an exact block that
// wins over a read-only "*" glob) sees the job actions there only; node
// actions need node write; a management token sees them all.
func TestUIActionsFollowTheTokensCapabilities(t *testing.T) {
	b := newBrowser(t, 1280, 800)
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"acl": map[string]any{"enabled": true}})
	const wait = 60 * time.Second
	waitFor(t, 20*time.Second, "signing key", func() bool { return len(a.jwksKeys()) > 0 })
	out, code := a.cliEnv(nil, "acl", "bootstrap")
	m := regexp.MustCompile(`Secret ID\s+= (\S+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("acl bootstrap (%d):\n%s", code, out)
	}
	root := m[1]
	a.client.SetSecretID(root)
	a.waitReady(true)
	if _, err := a.client.Namespaces().Register(&api.Namespace{Name: "team-a"}, nil); err != nil {
		t.Fatal(err)
	}
	for name, rules := range map[string]string{
		"readonly":     `namespace "*" { policy = "read" } node { policy = "read" }`,
		"team-a-write": `namespace "*" { policy = "read" } namespace "team-a" { policy = "write" } node { policy = "read" }`,
	} {
		if _, err := a.client.ACLPolicies().Upsert(&api.ACLPolicy{Name: name, Rules: rules}, nil); err != nil {
			t.Fatal(err)
		}
	}
	mkToken := func(policy string) string {
		tok, _, err := a.client.ACLTokens().Create(&api.ACLToken{Name: policy, Type: "client", Policies: []string{policy}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tok.SecretID
	}
	ro, tw := mkToken("readonly"), mkToken("team-a-write")
	for _, ns := range []string{"default", "team-a"} {
		job := rawExecJob("web", "service", 1, "sleep 300")
		job.Namespace = ptr(ns)
		if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
			t.Fatal(err)
		}
	}
	var allocID string
	waitFor(t, wait, "web running in team-a", func() bool {
		allocs, _, err := a.client.Jobs().Allocations("web", false, &api.QueryOptions{Namespace: "team-a"})
		if err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running" {
			allocID = allocs[0].ID
			return true
		}
		return false
	})
	nodes, _, err := a.client.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}

	signIn := func(secret string) {
		t.Helper()
		b.run("open the UI", wait, chromedp.Navigate(a.url("/ui/settings/tokens")))
		evalJS[bool](b, `localStorage.setItem("drover.token", `+jsString(secret)+`), true`)
	}
	// see opens path once what ready says is on the page and the token's
	// rights are known, and returns the actions shown.
	see := func(path, ready string) []string {
		t.Helper()
		b.run("open "+path, wait, chromedp.Navigate(a.url(path)))
		b.waitJS(path, wait, `document.body.dataset.caps === "ready" && (`+ready+`)`)
		return evalJS[[]string](b, visibleCaps)
	}
	jobReady := `document.querySelector("#stopbtn") && document.querySelector('#summary tr[data-group="g"]')`
	allocReady := `document.querySelector('.task[data-task="t"]') && document.querySelector('.task[data-task="t"]').innerText.includes("running")`
	nodeReady := `document.querySelector('#nodehead [data-act="drain"]')`

	signIn(ro)
	for _, p := range [][2]string{
		{"/ui/jobs", `document.querySelector('#jobrows tr[data-job="web"]')`},
		{"/ui/jobs/web", jobReady},
		{"/ui/jobs/web@team-a", jobReady},
		{"/ui/allocations/" + allocID, allocReady},
		{"/ui/clients/" + nodes[0].ID, nodeReady},
		{"/ui/jobs/web@team-a/definition", `document.querySelector("#jobsrc")`},
	} {
		if shown := see(p[0], p[1]); len(shown) != 0 {
			t.Errorf("read-only token: %s offers %q", p[0], shown)
		}
	}
	runNav := `document.querySelector('nav.side a[data-nav="run"]').offsetParent !== null`
	if evalJS[bool](b, runNav) {
		t.Error("read-only token: the navigation offers Run job")
	}
	if note := evalJS[string](b, `document.querySelector("[data-cap-note]").innerText`); note == "" {
		t.Error("the definition tab of a read-only token does not say it is read only")
	}
	b.shot("acl-readonly-definition")

	signIn(tw)
	if shown := see("/ui/jobs/web", jobReady); len(shown) != 0 {
		t.Errorf("team-a writer: the default namespace's job offers %q", shown)
	}
	shown := see("/ui/jobs/web@team-a", jobReady)
	if !contains(shown, "Stop") || !contains(shown, "Scale") || !evalJS[bool](b, runNav) {
		t.Errorf("team-a writer: the team-a job offers %q (Run job in the navigation: %v), want Stop, Scale and Run job", shown, evalJS[bool](b, runNav))
	}
	b.shot("acl-team-a-job")
	if shown := see("/ui/allocations/"+allocID, allocReady); !contains(shown, "Exec") || !contains(shown, "Restart") || !contains(shown, "Stop") {
		t.Errorf("team-a writer: the team-a allocation offers %q, want Exec, Restart and Stop", shown)
	}
	if shown := see("/ui/clients/"+nodes[0].ID, nodeReady); len(shown) != 0 {
		t.Errorf("team-a writer (node read): the client offers %q", shown)
	}

	signIn(root)
	if shown := see("/ui/clients/"+nodes[0].ID, nodeReady); !contains(shown, "Drain") || !contains(shown, "Mark ineligible") {
		t.Errorf("management token: the client offers %q, want Drain and Mark ineligible", shown)
	}
	if shown := see("/ui/jobs/web", jobReady); !contains(shown, "Stop") {
		t.Errorf("management token: the default job offers %q, want Stop", shown)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
