package server

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// ACL replication, as Nomad's: one region is authoritative
// (server.authoritative_region) and owns the global ACL objects: policies,
// roles, auth methods, binding rules and global tokens. The leader of every
// other region mirrors them into its own Raft log with blocking queries
// against the authoritative region, read with the replication token
// (acl.replication_token), and writes them through the ordinary ACL upsert
// and delete entries. Local (non-global) tokens stay in the region that made
// them: replication never writes nor deletes one. Writes of global objects
// made in another region are forwarded to the authoritative one
// (endpoint_acl.go) and come back through replication.

// authoritativeRegion is the region that owns the global ACL objects.
func (s *Server) authoritativeRegion() string {
	if s.config.AuthoritativeRegion != "" {
		return s.config.AuthoritativeRegion
	}
	return s.config.Region
}

// replicatesACLs reports whether this server's region mirrors the global
// ACL objects from another region.
func (s *Server) replicatesACLs() bool {
	return s.config.ACLEnabled && s.authoritativeRegion() != s.config.Region
}

// Replication pacing: at most one round per kind every replicationMinGap
// (a burst of upstream writes is taken in few rounds); after a failure the
// next try waits from replicationBackoffMin, doubling up to
// replicationBackoffMax.
const (
	replicationMinGap     = 100 * time.Millisecond
	replicationBackoffMin = 250 * time.Millisecond
	replicationBackoffMax = 5 * time.Second
	// replicationKeptRetry bounds the wait of a kind that keeps objects
	// deleted upstream (in use here), so they go soon after they are free.
	replicationKeptRetry = 5 * time.Second
)

// AuthoritativeRegion is the region whose global ACL objects this server's
// region uses (its own when it is the authoritative one).
func (s *Server) AuthoritativeRegion() string { return s.authoritativeRegion() }

// ReplicatesACLs reports whether this server's region mirrors the global
// ACL objects of another region (ACLs on, not authoritative).
func (s *Server) ReplicatesACLs() bool { return s.replicatesACLs() }

// ACLReplicationStatus is what the replication of one kind last did.
type ACLReplicationStatus struct {
	Kind        string
	RemoteIndex uint64    // the authoritative region's index last mirrored
	LastSuccess time.Time // zero: never
	LastError   string    // the last round's error ("" when it succeeded)
	// Kept names the objects deleted upstream that this region keeps
	// because they are still in use here (a namespace or node pool with
	// jobs), and the upstream ones left out because they conflict with
	// this region's own (a global token with a local token's ID), each
	// with why, sorted; retried until they can go.
	Kept []string
}

// aclReplState holds the replication status of each kind (for operators
// and tests); it survives leadership changes but is only updated by a
// leader's loops.
type aclReplState struct {
	mu    sync.Mutex
	kinds map[string]ACLReplicationStatus
}

func (r *aclReplState) set(st ACLReplicationStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kinds == nil {
		r.kinds = map[string]ACLReplicationStatus{}
	}
	r.kinds[st.Kind] = st
}

// ACLReplication returns the replication status of every kind, sorted by
// kind (empty when this region does not replicate or has not yet led).
func (s *Server) ACLReplication() []ACLReplicationStatus {
	s.aclRepl.mu.Lock()
	defer s.aclRepl.mu.Unlock()
	out := make([]ACLReplicationStatus, 0, len(s.aclRepl.kinds))
	for _, st := range s.aclRepl.kinds {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// replicatedKind describes how one kind of ACL object is mirrored.
type replicatedKind[T any] struct {
	name string
	// fetch runs one blocking query against the authoritative region.
	fetch func(q structs.QueryOptions) ([]*T, uint64, error)
	// local lists this region's copies (only those replication owns).
	local func(st *state.StateStore) ([]*T, error)
	key   func(*T) string
	// same reports whether two copies agree, indexes aside.
	same       func(a, b *T) bool
	upsertType structs.MessageType
	upsert     func([]*T) any
	deleteType structs.MessageType
	// deleteReq builds the delete entry (nil: an ACLNamesRequest).
	deleteReq func(names []string) any
	// builtin, when set, names objects every region has of its own:
	// never replicated, never deleted.
	builtin func(key string) bool
	// deletable, when set, says why this region cannot delete one of its
	// copies (still in use): it is kept and reported, not deleted.
	deletable func(st *state.StateStore, key string) error
	// conflict, when set, says why an upstream object cannot be written
	// here (it would overwrite one of this region's own): it is left out
	// and reported with what is kept.
	conflict func(st *state.StateStore, remote *T) error
}

// replicateACLs runs the replication loops of every kind until stopCh
// closes (a leader-only loop: establishLeadership starts it in a region
// that replicates, and the leadership's end stops it).
func (s *Server) replicateACLs(stopCh chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopCh:
		case <-s.shutdownCh:
		}
		cancel()
	}()
	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	run(func() { replicateKind(s, ctx, s.policyKind()) })
	run(func() { replicateKind(s, ctx, s.roleKind()) })
	run(func() { replicateKind(s, ctx, s.authMethodKind()) })
	run(func() { replicateKind(s, ctx, s.bindingRuleKind()) })
	run(func() { replicateKind(s, ctx, s.globalTokenKind()) })
	// Namespaces and node pools follow the same loop (Nomad starts
	// them with the ACL loops: only with ACLs on; tenancy_replication.go).
	run(func() { replicateKind(s, ctx, s.namespaceKind()) })
	run(func() { replicateKind(s, ctx, s.nodePoolKind()) })
	wg.Wait()
}

// wait sleeps d unless ctx ends first (false then).
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// replicateKind mirrors one kind until ctx ends: a blocking query on the
// authoritative region past the last index seen, then the diff written
// through Raft (upserts of what is new or changed, deletes of what
// disappeared upstream).
func replicateKind[T any](s *Server, ctx context.Context, k replicatedKind[T]) {
	var remoteIndex uint64
	backoff := replicationBackoffMin
	status := ACLReplicationStatus{Kind: k.name}
	for ctx.Err() == nil {
		q := structs.QueryOptions{
			Region: s.authoritativeRegion(), AuthToken: s.config.ReplicationToken,
			AllowStale: true, MinQueryIndex: remoteIndex, MaxQueryTime: maxQueryTime,
		}
		if len(status.Kept) > 0 {
			// Something deleted upstream is kept here while in use:
			// look again soon, not only when upstream changes.
			q.MaxQueryTime = replicationKeptRetry
		}
		q.WithContext(ctx)
		remote, index, err := k.fetch(q)
		if err == nil && ctx.Err() == nil {
			err = s.replicationTokenIsManagement(ctx)
		}
		var kept []string
		if err == nil && ctx.Err() == nil {
			kept, err = applyReplicated(s, k, remote)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			status.LastError = err.Error()
			s.aclRepl.set(status)
			s.logger.Warn("replication from the authoritative region failed", "kind", k.name, "authoritative_region", s.authoritativeRegion(), "error", err, "retry_in", backoff)
			remoteIndex = 0 // read everything again once it works
			if !wait(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, replicationBackoffMax)
			continue
		}
		backoff = replicationBackoffMin
		remoteIndex = index
		status.RemoteIndex, status.LastSuccess, status.LastError = index, time.Now(), ""
		if !slices.Equal(kept, status.Kept) && len(kept) > 0 {
			s.logger.Warn("replication keeps objects deleted upstream that are in use here, or leaves out upstream ones that conflict with this region's own", "kind", k.name, "authoritative_region", s.authoritativeRegion(), "kept", kept)
		}
		status.Kept = kept
		s.aclRepl.set(status)
		if !wait(ctx, replicationMinGap) {
			return
		}
	}
}

// replicationTokenIsManagement checks, before a round applies what it
// read, that the replication token is a management token in the
// authoritative region: the list queries of policies, roles, namespaces
// and node pools answer a lesser token only what it may read, and the
// round would delete the rest here as deleted upstream.
func (s *Server) replicationTokenIsManagement(ctx context.Context) error {
	q := structs.QueryOptions{Region: s.authoritativeRegion(), AuthToken: s.config.ReplicationToken, AllowStale: true}
	q.WithContext(ctx)
	var r structs.ACLResolveResponse
	if err := s.RPC("ACL.ResolveToken", &structs.ACLGetRequest{Name: s.config.ReplicationToken, QueryOptions: q}, &r); err != nil {
		return err
	}
	if r.Token == nil || r.Token.Type != structs.ACLManagementToken {
		return fmt.Errorf("acl.replication_token is not a management token in region %q: replication needs one to read every object, and nothing is replicated meanwhile", s.authoritativeRegion())
	}
	return nil
}

// applyReplicated makes this region's copies of one kind equal remote:
// one upsert entry for what is missing or differs, one delete entry for
// what the authoritative region no longer has. It returns what it kept
// though deleted upstream (still in use here), each with why.
func applyReplicated[T any](s *Server, k replicatedKind[T], remote []*T) ([]string, error) {
	st := s.State()
	local, err := k.local(st)
	if err != nil {
		return nil, err
	}
	isBuiltin := func(key string) bool { return k.builtin != nil && k.builtin(key) }
	have := make(map[string]*T, len(local))
	for _, l := range local {
		if key := k.key(l); !isBuiltin(key) {
			have[key] = l
		}
	}
	var upserts []*T
	var conflicts []string
	seen := make(map[string]bool, len(remote))
	for _, r := range remote {
		key := k.key(r)
		if isBuiltin(key) {
			continue
		}
		seen[key] = true
		if l, ok := have[key]; !ok || !k.same(l, r) {
			if k.conflict != nil {
				if why := k.conflict(st, r); why != nil {
					conflicts = append(conflicts, key+": "+why.Error())
					continue
				}
			}
			upserts = append(upserts, r)
		}
	}
	deletes, kept := []string(nil), conflicts
	for key := range have {
		if seen[key] {
			continue
		}
		if k.deletable != nil {
			if why := k.deletable(st, key); why != nil {
				kept = append(kept, key+": "+why.Error())
				continue
			}
		}
		deletes = append(deletes, key)
	}
	sort.Strings(deletes)
	sort.Strings(kept)
	// Upserts first: a namespace may name a new node pool as its default,
	// and a pool deleted upstream may be the default of a namespace that
	// the same round changes.
	if len(upserts) > 0 {
		if _, _, err := s.raftApply(k.upsertType, k.upsert(upserts)); err != nil {
			return nil, err
		}
	}
	if len(deletes) > 0 {
		var req any = &structs.ACLNamesRequest{Names: deletes}
		if k.deleteReq != nil {
			req = k.deleteReq(deletes)
		}
		if _, _, err := s.raftApply(k.deleteType, req); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// sameIgnoringIndexes compares two objects with their CreateIndex and
// ModifyIndex (which are each region's own) and the wall-clock location of
// their times (a decoding detail) left out.
func sameIgnoringIndexes[T any](a, b *T) bool {
	return reflect.DeepEqual(normalized(a), normalized(b))
}

// normalized is a copy of *p with its indexes zeroed and every time.Time
// field (direct or through a pointer) in UTC without a monotonic reading.
func normalized[T any](p *T) T {
	c := *p
	v := reflect.ValueOf(&c).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		switch name := v.Type().Field(i).Name; {
		case name == "CreateIndex" || name == "ModifyIndex":
			f.SetUint(0)
		case f.Type() == reflect.TypeOf(time.Time{}):
			f.Set(reflect.ValueOf(f.Interface().(time.Time).UTC()))
		case f.Type() == reflect.TypeOf(&time.Time{}) && !f.IsNil():
			t := f.Elem().Interface().(time.Time).UTC()
			f.Set(reflect.ValueOf(&t))
		}
	}
	return c
}

// The replicated kinds. Policies, roles and binding rules are read with
// their list queries (which answer whole objects to a management token);
// tokens and auth methods with ReplicateTokens and ReplicateAuthMethods,
// which keep the secrets their list queries leave out.

func (s *Server) policyKind() replicatedKind[structs.ACLPolicy] {
	return replicatedKind[structs.ACLPolicy]{
		name: "policies",
		fetch: func(q structs.QueryOptions) ([]*structs.ACLPolicy, uint64, error) {
			var r structs.ACLPolicyListResponse
			err := s.RPC("ACL.ListPolicies", &structs.ACLGetRequest{QueryOptions: q}, &r)
			return r.Policies, r.Index, err
		},
		local:      func(st *state.StateStore) ([]*structs.ACLPolicy, error) { return st.ACLPolicies(nil) },
		key:        func(p *structs.ACLPolicy) string { return p.Name },
		same:       sameIgnoringIndexes[structs.ACLPolicy],
		upsertType: structs.ACLPolicyUpsertRequestType,
		upsert:     func(ps []*structs.ACLPolicy) any { return &structs.ACLPolicyUpsertRequest{Policies: ps} },
		deleteType: structs.ACLPolicyDeleteRequestType,
	}
}

func (s *Server) roleKind() replicatedKind[structs.ACLRole] {
	return replicatedKind[structs.ACLRole]{
		name: "roles",
		fetch: func(q structs.QueryOptions) ([]*structs.ACLRole, uint64, error) {
			var r structs.ACLRoleListResponse
			err := s.RPC("ACL.ListRoles", &structs.ACLGetRequest{QueryOptions: q}, &r)
			return r.Roles, r.Index, err
		},
		local:      func(st *state.StateStore) ([]*structs.ACLRole, error) { return st.ACLRoles(nil) },
		key:        func(r *structs.ACLRole) string { return r.ID },
		same:       sameIgnoringIndexes[structs.ACLRole],
		upsertType: structs.ACLRoleUpsertRequestType,
		upsert:     func(rs []*structs.ACLRole) any { return &structs.ACLRoleUpsertRequest{Roles: rs} },
		deleteType: structs.ACLRoleDeleteRequestType,
	}
}

func (s *Server) authMethodKind() replicatedKind[structs.ACLAuthMethod] {
	return replicatedKind[structs.ACLAuthMethod]{
		name: "auth-methods",
		fetch: func(q structs.QueryOptions) ([]*structs.ACLAuthMethod, uint64, error) {
			var r structs.ACLAuthMethodListResponse
			err := s.RPC("ACL.ReplicateAuthMethods", &structs.ACLGetRequest{QueryOptions: q}, &r)
			return r.AuthMethods, r.Index, err
		},
		local:      func(st *state.StateStore) ([]*structs.ACLAuthMethod, error) { return st.ACLAuthMethods(nil) },
		key:        func(m *structs.ACLAuthMethod) string { return m.Name },
		same:       sameIgnoringIndexes[structs.ACLAuthMethod],
		upsertType: structs.ACLAuthMethodUpsertRequestType,
		upsert:     func(ms []*structs.ACLAuthMethod) any { return &structs.ACLAuthMethodUpsertRequest{AuthMethods: ms} },
		deleteType: structs.ACLAuthMethodDeleteRequestType,
	}
}

func (s *Server) bindingRuleKind() replicatedKind[structs.ACLBindingRule] {
	return replicatedKind[structs.ACLBindingRule]{
		name: "binding-rules",
		fetch: func(q structs.QueryOptions) ([]*structs.ACLBindingRule, uint64, error) {
			var r structs.ACLBindingRuleListResponse
			err := s.RPC("ACL.ListBindingRules", &structs.ACLGetRequest{QueryOptions: q}, &r)
			return r.Rules, r.Index, err
		},
		local:      func(st *state.StateStore) ([]*structs.ACLBindingRule, error) { return st.ACLBindingRules(nil) },
		key:        func(r *structs.ACLBindingRule) string { return r.ID },
		same:       sameIgnoringIndexes[structs.ACLBindingRule],
		upsertType: structs.ACLBindingRuleUpsertRequestType,
		upsert:     func(rs []*structs.ACLBindingRule) any { return &structs.ACLBindingRuleUpsertRequest{Rules: rs} },
		deleteType: structs.ACLBindingRuleDeleteRequestType,
	}
}

// globalTokenKind mirrors global tokens only: the local copies it compares
// against (and may delete) are this region's global tokens, so a local
// token is never touched.
func (s *Server) globalTokenKind() replicatedKind[structs.ACLToken] {
	return replicatedKind[structs.ACLToken]{
		name: "tokens",
		fetch: func(q structs.QueryOptions) ([]*structs.ACLToken, uint64, error) {
			var r structs.ACLTokenListResponse
			err := s.RPC("ACL.ReplicateTokens", &structs.ACLGetRequest{QueryOptions: q}, &r)
			return r.Tokens, r.Index, err
		},
		local: func(st *state.StateStore) ([]*structs.ACLToken, error) {
			all, err := st.ACLTokens(nil)
			if err != nil {
				return nil, err
			}
			return globalTokens(all), nil
		},
		key:        func(t *structs.ACLToken) string { return t.AccessorID },
		same:       sameIgnoringIndexes[structs.ACLToken],
		upsertType: structs.ACLTokenUpsertRequestType,
		upsert:     func(ts []*structs.ACLToken) any { return &structs.ACLTokenUpsertRequest{Tokens: ts} },
		deleteType: structs.ACLTokenDeleteRequestType,
		// A global token whose accessor or secret ID is one of this
		// region's local tokens' (IDs chosen by an upload) would replace
		// that token or share its secret: it is not written here.
		conflict: func(st *state.StateStore, t *structs.ACLToken) error {
			if l, _ := st.ACLTokenByAccessorID(nil, t.AccessorID); l != nil && !l.Global {
				return fmt.Errorf("its accessor ID is a local token's of this region (%q)", l.Name)
			}
			if l, _ := st.ACLTokenBySecretID(nil, t.SecretID); l != nil && !l.Global && l.AccessorID != t.AccessorID {
				return fmt.Errorf("its secret ID is a local token's of this region (%q)", l.Name)
			}
			return nil
		},
	}
}

func globalTokens(all []*structs.ACLToken) []*structs.ACLToken {
	var out []*structs.ACLToken
	for _, t := range all {
		if t.Global {
			out = append(out, t)
		}
	}
	return out
}

// ReplicateTokens answers another region's replication: every global
// token, secrets included (management only).
func (a *ACL) ReplicateTokens(args *structs.ACLGetRequest, reply *structs.ACLTokenListResponse) error {
	return a.read("ReplicateTokens", args, reply, &reply.QueryMeta, management, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		all, err := st.ACLTokens(ws)
		if err != nil {
			return err
		}
		reply.Tokens = globalTokens(all)
		reply.Index = maxIndex(st, state.TableACLTokens)
		return nil
	})
}

// ReplicateAuthMethods answers another region's replication: every auth
// method with its OIDC client secret, which every other answer redacts
// (management only), so that logins work in every region.
func (a *ACL) ReplicateAuthMethods(args *structs.ACLGetRequest, reply *structs.ACLAuthMethodListResponse) error {
	return a.read("ReplicateAuthMethods", args, reply, &reply.QueryMeta, management, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		all, err := st.ACLAuthMethods(ws)
		if err != nil {
			return err
		}
		reply.AuthMethods = all
		reply.Index = maxIndex(st, state.TableACLAuthMethods)
		return nil
	})
}
