package server

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// rpcMethods lists every method net/rpc registers for the server's
// endpoints (exported, args and a pointer reply, returning error).
func rpcMethods(s *Server) []string {
	errType := reflect.TypeOf((*error)(nil)).Elem()
	var out []string
	for name, ep := range s.endpoints() {
		t := reflect.TypeOf(ep)
		for i := 0; i < t.NumMethod(); i++ {
			m := t.Method(i)
			mt := m.Type
			if !m.IsExported() || mt.NumIn() != 3 || mt.NumOut() != 1 || mt.Out(0) != errType ||
				mt.In(2).Kind() != reflect.Pointer {
				continue
			}
			out = append(out, name+"."+m.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Every RPC method is classified, so a new one cannot land unchecked; and
// the table names no method that does not exist.
func TestRPCAuthTableCoversEveryMethod(t *testing.T) {
	s := testServer(t, nil)
	methods := rpcMethods(s)
	if len(methods) < 100 {
		t.Fatalf("only %d RPC methods found: %v", len(methods), methods)
	}
	seen := map[string]bool{}
	for _, m := range methods {
		seen[m] = true
		e, ok := rpcAuthTable[m]
		if !ok {
			t.Errorf("RPC %s is not classified in rpcAuthTable", m)
			continue
		}
		if e.class < rpcPublic || e.class > rpcServer {
			t.Errorf("RPC %s has no valid class", m)
		}
		if e.class == rpcRead && e.check == nil {
			t.Errorf("RPC %s is a checked read without a check", m)
		}
	}
	for m := range rpcAuthTable {
		if !seen[m] {
			t.Errorf("rpcAuthTable names %s, which is not a registered RPC", m)
		}
	}
}

// rpcAuthFixture is an ACL server with a namespace "other", a job in it
// and in default, and a client token that reads (only) default.
func rpcAuthFixture(t *testing.T) (s *Server, root, ro string) {
	s, root = aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	if err := s.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "other"}}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"default", "other"} {
		job := testJob("web-"+ns, 1)
		job.Namespace = ns
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Namespace: ns, AuthToken: root}}, &structs.JobRegisterResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "ro", Rules: `namespace "default" { policy = "read" }
node { policy = "write" }`},
	}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	var toks structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{Type: "client", Policies: []string{"ro"}}}, WriteRequest: wr}, &toks); err != nil {
		t.Fatal(err)
	}
	return s, root, toks.Tokens[0].SecretID
}

func rpcPool(t *testing.T) *droverrpc.Pool {
	p := droverrpc.NewPool(5 * time.Second)
	t.Cleanup(p.Shutdown)
	return p
}

// A namespace-read token reads its namespace's job over the RPC port but
// not another namespace's, and a list across namespaces shows only its own.
func TestRPCAuthReadsCheckNamespace(t *testing.T) {
	s, root, ro := rpcAuthFixture(t)
	p := rpcPool(t)
	get := func(ns, id, token string) error {
		var reply structs.SingleJobResponse
		err := p.Call(s.RPCAddr(), "Job.GetJob", &structs.JobSpecificRequest{JobID: id, QueryOptions: structs.QueryOptions{Namespace: ns, AuthToken: token}}, &reply)
		if err == nil && reply.Job == nil {
			t.Errorf("Job.GetJob %s/%s answered no job", ns, id)
		}
		return err
	}
	if err := get("default", "web-default", ro); err != nil {
		t.Errorf("reading its own namespace's job: %v", err)
	}
	if err := get("other", "web-other", ro); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("reading another namespace's job: %v, want Permission denied", err)
	}
	if err := get("other", "web-other", ""); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("reading without a token: %v, want Permission denied", err)
	}
	if err := get("other", "web-other", root); err != nil {
		t.Errorf("reading with management: %v", err)
	}
	list := func(token string) []string {
		var reply structs.JobListResponse
		if err := p.Call(s.RPCAddr(), "Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{Namespace: "*", AuthToken: token}}, &reply); err != nil {
			t.Fatalf("Job.List *: %v", err)
		}
		var ids []string
		for _, j := range reply.Jobs {
			ids = append(ids, j.Namespace+"/"+j.ID)
		}
		sort.Strings(ids)
		return ids
	}
	if got := list(ro); !reflect.DeepEqual(got, []string{"default/web-default"}) {
		t.Errorf("Job.List * with a default-read token = %v, want only default/web-default", got)
	}
	if got := list(root); len(got) != 2 {
		t.Errorf("Job.List * with management = %v, want both jobs", got)
	}
	// node:read reaches the node list; an unknown token does not.
	if err := p.Call(s.RPCAddr(), "Node.List", &structs.NodeListRequest{QueryOptions: structs.QueryOptions{AuthToken: ro}}, &structs.NodeListResponse{}); err != nil {
		t.Errorf("Node.List with node:write: %v", err)
	}
	if err := p.Call(s.RPCAddr(), "Node.List", &structs.NodeListRequest{QueryOptions: structs.QueryOptions{AuthToken: "not-a-token"}}, &structs.NodeListResponse{}); err == nil {
		t.Error("Node.List with an unknown token was answered")
	}
	// The agent's own in-process calls (its HTTP layer authorized them)
	// do not pass through the RPC port's check.
	var reply structs.SingleJobResponse
	if err := s.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: "web-other", QueryOptions: structs.QueryOptions{Namespace: "other", AuthToken: root}}, &reply); err != nil || reply.Job == nil {
		t.Errorf("in-process Job.GetJob: %v", err)
	}
}

// Server-only RPCs refuse any token, management included, over the RPC
// port; the cluster's server secret is admitted.
func TestRPCAuthServerOnlyRefusesTokens(t *testing.T) {
	s, root, ro := rpcAuthFixture(t)
	p := rpcPool(t)
	var serverOnly []string
	for m, e := range rpcAuthTable {
		if e.class == rpcServer {
			serverOnly = append(serverOnly, m)
		}
	}
	sort.Strings(serverOnly)
	if len(serverOnly) < 8 {
		t.Fatalf("server-only RPCs: %v", serverOnly)
	}
	argsFor := func(method, token string) (any, any) {
		q := structs.QueryOptions{AuthToken: token}
		w := structs.WriteRequest{AuthToken: token}
		switch method {
		case "Eval.Dequeue":
			return &structs.EvalDequeueRequest{Schedulers: []string{"service"}, Timeout: 50 * time.Millisecond, WriteRequest: w}, &structs.EvalDequeueResponse{}
		case "Eval.Ack", "Eval.Nack":
			return &structs.EvalAckRequest{EvalID: "x", Token: "y", WriteRequest: w}, &structs.GenericResponse{}
		case "Eval.Update", "Eval.Create", "Eval.Reblock":
			return &structs.EvalUpdateRequest{WriteRequest: w}, &structs.GenericResponse{}
		case "Plan.Submit":
			return &structs.PlanRequest{WriteRequest: w}, &structs.PlanResponse{}
		case "Status.RaftStats":
			return &structs.GenericRequest{QueryOptions: q}, &structs.RaftStatsResponse{}
		case "Keyring.Get":
			return &structs.KeyringGetRootKeyRequest{KeyID: "k", QueryOptions: q}, &structs.KeyringGetRootKeyResponse{}
		case "Keyring.Deliver":
			return &structs.KeyringDeliverRootKeyRequest{KeyID: "k", WriteRequest: w}, &structs.GenericResponse{}
		}
		t.Fatalf("no arguments for %s", method)
		return nil, nil
	}
	for _, m := range serverOnly {
		for _, tok := range []string{ro, root, ""} {
			args, reply := argsFor(m, tok)
			err := p.Call(s.RPCAddr(), m, args, reply)
			if err == nil || !strings.Contains(err.Error(), "only servers") {
				t.Errorf("%s with a non-server token: %v, want refused as server-only", m, err)
			}
		}
	}
	var secret string
	waitFor(t, 5*time.Second, "server secret", func() bool { secret = s.serverSecret(); return secret != "" })
	args, reply := argsFor("Status.RaftStats", secret)
	if err := p.Call(s.RPCAddr(), "Status.RaftStats", args, reply); err != nil {
		t.Errorf("Status.RaftStats with the server secret: %v", err)
	}
	args, reply = argsFor("Eval.Ack", secret)
	if err := p.Call(s.RPCAddr(), "Eval.Ack", args, reply); err == nil || strings.Contains(err.Error(), "only servers") {
		t.Errorf("Eval.Ack with the server secret: %v, want past the check (an unknown eval)", err)
	}
}

// A follower's workers reach the leader's server-only RPCs: the follower
// forwards them with the server secret the leader wrote through Raft.
func TestRPCAuthFollowerWorkersReachLeader(t *testing.T) {
	servers := testClusterWith(t, 3, func(_ int, c *Config) { c.ACLEnabled = true })
	var leader *Server
	waitFor(t, 10*time.Second, "a leader and the server secret on every server", func() bool {
		if leader = currentLeader(servers); leader == nil {
			return false
		}
		for _, s := range servers {
			if s.serverSecret() == "" {
				return false
			}
		}
		return true
	})
	var follower *Server
	for _, s := range servers {
		if s != leader {
			follower = s
			break
		}
	}
	var reply structs.EvalDequeueResponse
	req := &structs.EvalDequeueRequest{Schedulers: []string{"service"}, Timeout: 50 * time.Millisecond}
	if err := follower.RPC("Eval.Dequeue", req, &reply); err != nil {
		t.Fatalf("a follower's Eval.Dequeue through the leader: %v", err)
	}
	// The secret is not a token: it resolves to nothing for reads.
	p := rpcPool(t)
	err := p.Call(leader.RPCAddr(), "Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{AuthToken: leader.serverSecret()}}, &structs.JobListResponse{})
	if err == nil {
		t.Error("the server secret was accepted as an ACL token")
	}
}

// Every list answer the table filters keeps only the readable namespaces'
// elements, whatever field carries the namespace.
func TestRPCAuthFilterReplyKinds(t *testing.T) {
	onlyDefault := func(ns string) bool { return ns == "default" }
	jobs := &structs.JobListResponse{Jobs: []*structs.JobListStub{{ID: "a", Namespace: "default"}, {ID: "b", Namespace: "other"}}}
	filterReply(jobs, onlyDefault)
	if len(jobs.Jobs) != 1 || jobs.Jobs[0].ID != "a" {
		t.Errorf("jobs after filtering: %+v", jobs.Jobs)
	}
	pols := &structs.ScalingPolicyListResponse{Policies: []*structs.ScalingPolicyListStub{
		{ID: "p1", Target: map[string]string{"Namespace": "default"}},
		{ID: "p2", Target: map[string]string{"Namespace": "other"}},
	}}
	filterReply(pols, onlyDefault)
	if len(pols.Policies) != 1 || pols.Policies[0].ID != "p1" {
		t.Errorf("scaling policies after filtering: %+v", pols.Policies)
	}
	nss := &structs.NamespaceListResponse{Namespaces: []*structs.Namespace{{Name: "default"}, {Name: "other"}}}
	filterReply(nss, onlyDefault)
	if len(nss.Namespaces) != 1 || nss.Namespaces[0].Name != "default" {
		t.Errorf("namespaces after filtering: %+v", nss.Namespaces)
	}
}
