package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

func aclServer(t *testing.T) (*Server, string) {
	t.Helper()
	dir := t.TempDir()
	s := testServer(t, func(c *Config) { c.ACLEnabled = true; c.DataDir = dir })
	var reply structs.ACLTokenResponse
	if err := s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &reply); err != nil {
		t.Fatal(err)
	}
	return s, reply.Token.SecretID
}

func TestACLBootstrapOnceAndResetFile(t *testing.T) {
	s, root := aclServer(t)
	_, a, err := s.resolveToken(root)
	if err != nil || !a.IsManagement() {
		t.Fatalf("bootstrap token resolves to %v, %v; want management", a, err)
	}
	var reply structs.ACLTokenResponse
	err = s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &reply)
	if err == nil || !strings.Contains(err.Error(), "ACL bootstrap already done (reset index: ") {
		t.Fatalf("second bootstrap: %v", err)
	}
	done, _ := s.State().ACLBootstrapIndex()
	// The reset file with another index does not help; with the index it does.
	os.WriteFile(filepath.Join(s.config.DataDir, bootstrapResetFile), []byte("1\n"), 0o600)
	if err := s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &reply); err == nil {
		t.Fatal("bootstrap with a wrong reset index was accepted")
	}
	os.WriteFile(filepath.Join(s.config.DataDir, bootstrapResetFile), []byte(fmt.Sprint(done)), 0o600)
	if err := s.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{}, &reply); err != nil {
		t.Fatalf("bootstrap with the reset index: %v", err)
	}
	if reply.Token.SecretID == root {
		t.Fatal("reset bootstrap returned the old token")
	}
}

func TestACLTokenExpiredAndUnknownRefused(t *testing.T) {
	s, root := aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "r", Rules: `node { policy = "read" }`}}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	// Expiry is decided against the clock at resolution: write a token
	// that expired a second ago straight through Raft.
	past := time.Now().Add(-time.Second)
	tok := &structs.ACLToken{AccessorID: newID(), SecretID: newID(), Type: "client", Policies: []string{"r"}, ExpirationTime: &past}
	if _, _, err := s.raftApply(structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tok}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.resolveToken(tok.SecretID); err == nil || !strings.Contains(err.Error(), "ACL token expired") {
		t.Fatalf("expired token: %v", err)
	}
	if _, _, err := s.resolveToken("no-such-secret"); err == nil || !strings.Contains(err.Error(), "ACL token not found") {
		t.Fatalf("unknown token: %v", err)
	}
	// A TTL out of bounds is refused at creation.
	var out structs.ACLTokenUpsertResponse
	err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{Type: "client", Policies: []string{"r"}, ExpirationTTL: time.Second}}, WriteRequest: wr}, &out)
	if err == nil || !strings.Contains(err.Error(), "expiration time cannot be less than") {
		t.Fatalf("1s TTL: %v", err)
	}
}

// The resolution cache answers what a plain recomputation from the same
// snapshot answers while policies, roles and tokens change concurrently,
// including entries that write several policies at one Raft index.
func TestACLCacheMatchesRecomputation(t *testing.T) {
	s, root := aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	rules := []string{`namespace "default" { policy = "read" }`, `namespace "default" { policy = "write" }`, `node { policy = "read" }`, `namespace "*" { policy = "deny" }`}
	upsertPolicies := func(i int) {
		// Two policies in one entry: one Raft index, two writes.
		ps := []*structs.ACLPolicy{{Name: "p1", Rules: rules[i%len(rules)]}, {Name: "p2", Rules: rules[(i+1)%len(rules)]}}
		if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: ps, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
			t.Error(err)
		}
	}
	upsertPolicies(0)
	var role structs.ACLRoleUpsertResponse
	if err := s.RPC("ACL.UpsertRoles", &structs.ACLRoleUpsertRequest{Roles: []*structs.ACLRole{{Name: "r", Policies: []*structs.ACLRolePolicyLink{{Name: "p2"}}}}, WriteRequest: wr}, &role); err != nil {
		t.Fatal(err)
	}
	var toks structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Type: "client", Policies: []string{"p1"}},
		{Type: "client", Roles: []*structs.ACLTokenRoleLink{{Name: "r"}}},
		{Type: "client", Policies: []string{"p1", "p2"}},
	}, WriteRequest: wr}, &toks); err != nil {
		t.Fatal(err)
	}
	checks := func(a *acl.ACL) string {
		return fmt.Sprint(a.AllowNamespaceOperation("default", acl.NamespaceCapabilityReadJob),
			a.AllowNamespaceOperation("default", acl.NamespaceCapabilitySubmitJob),
			a.AllowNamespaceOperation("x", acl.NamespaceCapabilityReadJob), a.AllowNodeRead())
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i < 60; i++ {
			upsertPolicies(i)
			if i%7 == 0 {
				// Swap the first token's policy (a token write).
				t0 := *toks.Tokens[0]
				t0.Policies = []string{fmt.Sprintf("p%d", 1+i%2)}
				if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{&t0}, WriteRequest: wr}, &structs.ACLTokenUpsertResponse{}); err != nil {
					t.Error(err)
				}
			}
		}
		stop.Store(true)
	}()
	var compared atomic.Int64
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				for _, tok := range toks.Tokens {
					st, err := s.State().Snapshot()
					if err != nil {
						t.Error(err)
						return
					}
					_, cached, err := s.acls.resolve(st, tok.SecretID, time.Now())
					if err != nil {
						t.Error(err)
						return
					}
					_, ps, err := tokenPolicies(st, tok.SecretID)
					if err != nil {
						t.Error(err)
						return
					}
					plain, err := compilePolicies(ps)
					if err != nil {
						t.Error(err)
						return
					}
					if checks(cached) != checks(plain) {
						t.Errorf("cache %s != recomputed %s", checks(cached), checks(plain))
						return
					}
					compared.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if compared.Load() < 10 {
		t.Fatalf("only %d comparisons", compared.Load())
	}
}

// Writes reachable over the RPC port check the token themselves.
func TestACLRPCWritesEnforced(t *testing.T) {
	s, root := aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "ro", Rules: `namespace "default" { policy = "read" }`},
	}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	var toks structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{Type: "client", Policies: []string{"ro"}}}, WriteRequest: wr}, &toks); err != nil {
		t.Fatal(err)
	}
	ro := toks.Tokens[0].SecretID
	job := testJob("web", 1)
	for _, tc := range []struct {
		name, method string
		args, reply  any
	}{
		{"register", "Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Namespace: "default", AuthToken: ro}}, &structs.JobRegisterResponse{}},
		{"deregister", "Job.Deregister", &structs.JobDeregisterRequest{JobID: "web", WriteRequest: structs.WriteRequest{Namespace: "default", AuthToken: ro}}, &structs.JobDeregisterResponse{}},
		{"policy upsert", "ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "x", Rules: `node { policy = "read" }`}}, WriteRequest: structs.WriteRequest{AuthToken: ro}}, &structs.WriteMeta{}},
		{"token list", "ACL.ListTokens", &structs.ACLGetRequest{QueryOptions: structs.QueryOptions{AuthToken: ro}}, &structs.ACLTokenListResponse{}},
	} {
		err := s.RPC(tc.method, tc.args, tc.reply)
		if err == nil || !strings.Contains(err.Error(), "Permission denied") {
			t.Errorf("%s with a read token: %v, want Permission denied", tc.name, err)
		}
	}
	// The management token may.
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Namespace: "default", AuthToken: root}}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatalf("register with management: %v", err)
	}
}

// The leader deletes expired tokens and one-time tokens.
func TestACLExpiredTokensCollected(t *testing.T) {
	s, root := aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "r", Rules: `node { policy = "read" }`}}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	var toks structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Type: "client", Policies: []string{"r"}, ExpirationTTL: time.Hour},
		{Type: "client", Policies: []string{"r"}},
	}, WriteRequest: wr}, &toks); err != nil {
		t.Fatal(err)
	}
	var ott structs.OneTimeTokenUpsertResponse
	if err := s.RPC("ACL.UpsertOneTimeToken", &structs.OneTimeTokenUpsertRequest{WriteRequest: structs.WriteRequest{AuthToken: toks.Tokens[1].SecretID}}, &ott); err != nil {
		t.Fatal(err)
	}
	// Two hours on: the TTL token and the one-time token are past expiry.
	if err := s.gcExpiredACL(time.Now().Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	st := s.State()
	if tk, _ := st.ACLTokenByAccessorID(nil, toks.Tokens[0].AccessorID); tk != nil {
		t.Fatal("the expired token is still stored")
	}
	if tk, _ := st.ACLTokenByAccessorID(nil, toks.Tokens[1].AccessorID); tk == nil {
		t.Fatal("the token without expiry was deleted")
	}
	if o, _ := st.OneTimeTokenBySecret(nil, ott.OneTimeToken.OneTimeSecretID); o != nil {
		t.Fatal("the expired one-time token is still stored")
	}
}

// Requests without a token act as the anonymous token, whose one policy
// is the one named "anonymous": nothing until it exists.
func TestACLAnonymousPolicy(t *testing.T) {
	s, root := aclServer(t)
	if err := s.authorizeNS("", "default", acl.NamespaceCapabilityReadJob); err == nil {
		t.Fatal("anonymous may read before an anonymous policy exists")
	}
	if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: structs.AnonymousACLPolicy, Rules: `namespace "default" { policy = "read" }`},
	}, WriteRequest: structs.WriteRequest{AuthToken: root}}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := s.authorizeNS("", "default", acl.NamespaceCapabilityReadJob); err != nil {
		t.Fatalf("anonymous cannot read with the anonymous policy: %v", err)
	}
	if err := s.authorizeNS("", "default", acl.NamespaceCapabilitySubmitJob); err == nil {
		t.Fatal("anonymous may submit")
	}
}

// The event stream a client agent forwards (Event.Poll, on the RPC port)
// checks the reader's token.
func TestACLEventPollNeedsToken(t *testing.T) {
	s, root := aclServer(t)
	req := events.Request{Topics: map[string][]string{events.TopicJob: {"*"}}, Namespace: "default"}
	var reply events.PollResponse
	err := s.RPC("Event.Poll", &events.PollRequest{Req: req, Wait: 10 * time.Millisecond}, &reply)
	if err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("anonymous poll: %v", err)
	}
	req.AuthToken = root
	if err := s.RPC("Event.Poll", &events.PollRequest{Req: req, Wait: 10 * time.Millisecond}, &reply); err != nil {
		t.Fatalf("poll with the management token: %v", err)
	}
}

// A token with a TTL is updated the way `acl token update` does it: read,
// change the name, policies or type, send it all back. The TTL and expiry
// it sends back unchanged are not a change; a different TTL or expiry is
// still refused, and the token keeps both. Before, any token with a TTL
// could not be updated at all ("Cannot update expiration TTL"), and an
// update that left the TTL out dropped it from the token.
func TestACLTokenUpdateKeepsItsTTL(t *testing.T) {
	s, root := aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "r", Rules: `node { policy = "read" }`}, {Name: "w", Rules: `node { policy = "write" }`}}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	var created structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Name: "ci", Type: "client", Policies: []string{"r"}, ExpirationTTL: time.Hour}}, WriteRequest: wr}, &created); err != nil {
		t.Fatal(err)
	}
	orig := created.Tokens[0]
	read := func() *structs.ACLToken {
		t.Helper()
		var got structs.ACLTokenResponse
		if err := s.RPC("ACL.GetToken", &structs.ACLGetRequest{Name: orig.AccessorID, QueryOptions: structs.QueryOptions{AuthToken: root}}, &got); err != nil || got.Token == nil {
			t.Fatalf("reading the token: %v %v", got.Token, err)
		}
		c := *got.Token // a copy: the state's object is never changed
		c.Policies = append([]string(nil), c.Policies...)
		return &c
	}
	update := func(tok *structs.ACLToken) error {
		return s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tok}, WriteRequest: wr}, &structs.ACLTokenUpsertResponse{})
	}

	tok := read()
	tok.Name, tok.Policies = "ci-renamed", []string{"w"}
	if err := update(tok); err != nil {
		t.Fatalf("updating a token with a TTL as read: %v", err)
	}
	tok = read()
	tok.ExpirationTTL, tok.ExpirationTime = 0, nil // an update that leaves them out
	tok.Name = "ci-3"
	if err := update(tok); err != nil {
		t.Fatalf("updating without the TTL: %v", err)
	}
	got := read()
	if got.Name != "ci-3" || len(got.Policies) != 1 || got.Policies[0] != "w" || got.ExpirationTTL != time.Hour ||
		got.ExpirationTime == nil || !got.ExpirationTime.Equal(*orig.ExpirationTime) || got.SecretID != orig.SecretID {
		t.Fatalf("after the updates: %+v (created %+v)", got, orig)
	}

	tok = read()
	tok.ExpirationTTL = 2 * time.Hour
	if err := update(tok); err == nil || !strings.Contains(err.Error(), "Cannot update expiration TTL") {
		t.Fatalf("a changed TTL: %v", err)
	}
	tok = read()
	later := tok.ExpirationTime.Add(time.Hour)
	tok.ExpirationTime = &later
	if err := update(tok); err == nil || !strings.Contains(err.Error(), "Cannot update expiration time") {
		t.Fatalf("a changed expiry: %v", err)
	}
	if got := read(); !got.ExpirationTime.Equal(*orig.ExpirationTime) {
		t.Fatalf("a refused update changed the expiry to %v", got.ExpirationTime)
	}
}

// Service events need read-job in their namespace, as Nomad's event
// stream documents, like job and allocation events: a namespace token was
// refused them (403) and could not follow its own services' registrations.
// Another namespace's services and the every-topic stream stay refused
// (every namespace, "*", is filtered: TestACLEventPollEveryNamespaceIsFiltered).
func TestACLEventPollServiceTopicNeedsReadJob(t *testing.T) {
	s, root := aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "web-read", Rules: `namespace "web" { policy = "read" }`}}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	var created structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Type: "client", Policies: []string{"web-read"}}}, WriteRequest: wr}, &created); err != nil {
		t.Fatal(err)
	}
	poll := func(topic, ns string) error {
		req := events.Request{Topics: map[string][]string{topic: {"*"}}, Namespace: ns, AuthToken: created.Tokens[0].SecretID}
		return s.RPC("Event.Poll", &events.PollRequest{Req: req, Wait: 10 * time.Millisecond}, &events.PollResponse{})
	}
	if err := poll(events.TopicService, "web"); err != nil {
		t.Fatalf("service events of the token's namespace: %v", err)
	}
	for _, c := range []struct{ topic, ns string }{{events.TopicService, "default"}, {events.TopicAll, "web"}} {
		if err := poll(c.topic, c.ns); err == nil || !strings.Contains(err.Error(), "Permission denied") {
			t.Errorf("topic %s in namespace %q: %v, want Permission denied", c.topic, c.ns, err)
		}
	}
}

// A stream of every namespace (namespace=*) opened with a token that is
// not a management token carries the events of the namespaces the token
// may read jobs in, and none of the others, as Nomad filters them. Before,
// it was refused with Permission denied: only a management token could
// follow more than one namespace.
func TestACLEventPollEveryNamespaceIsFiltered(t *testing.T) {
	s, root := aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	if err := s.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "web"}, {Name: "other"}},
		WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "web-read", Rules: `namespace "web" { policy = "read" }`}}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	var created structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Type: "client", Policies: []string{"web-read"}}}, WriteRequest: wr}, &created); err != nil {
		t.Fatal(err)
	}
	for _, j := range []struct{ id, ns string }{{"secret-job", "other"}, {"web-job", "web"}, {"secret-job-2", "other"}} {
		job := testJob(j.id, 1)
		job.Namespace = j.ns
		var resp structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{AuthToken: root, Namespace: j.ns}}, &resp); err != nil {
			t.Fatal(err)
		}
	}
	poll := func(token string) string {
		t.Helper()
		req := events.Request{Topics: map[string][]string{events.TopicJob: {"*"}}, Namespace: "*", AuthToken: token}
		var reply events.PollResponse
		if err := s.RPC("Event.Poll", &events.PollRequest{Req: req, Wait: time.Second}, &reply); err != nil {
			t.Fatalf("poll of every namespace: %v", err)
		}
		if reply.Err != "" {
			t.Fatalf("poll of every namespace: %s", reply.Err)
		}
		var all []string
		for _, f := range reply.Frames {
			all = append(all, string(f))
		}
		return strings.Join(all, "")
	}
	got := poll(created.Tokens[0].SecretID)
	if !strings.Contains(got, `"Key":"web-job"`) || strings.Contains(got, "secret-job") {
		t.Fatalf("a web-read token's stream of every namespace:\n%s\nwant web-job's events and none of namespace other", got)
	}
	if got := poll(root); !strings.Contains(got, `"Key":"secret-job"`) {
		t.Fatalf("the management token's stream of every namespace lacks namespace other:\n%s", got)
	}
}
