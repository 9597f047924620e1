package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// The ACL tables. Every write to any of them bumps its table's index;
// ACLIndex is the highest of them, which token resolution caches key on.
const (
	TableACLPolicies    = "acl_policy"
	TableACLTokens      = "acl_token"
	TableACLRoles       = "acl_role"
	TableACLAuthMethods = "acl_auth_method"
	TableACLBindingRule = "acl_binding_rule"
	TableOneTimeTokens  = "one_time_token"
	// indexACLBootstrap records the index of the bootstrap entry (the
	// number an operator writes in the reset file to bootstrap again).
	indexACLBootstrap = "acl_token_bootstrap"
)

// ACLTables lists the ACL tables (snapshots, cache invalidation).
var ACLTables = []string{TableACLPolicies, TableACLTokens, TableACLRoles, TableACLAuthMethods, TableACLBindingRule, TableOneTimeTokens}

var (
	aclPolicyName    = func(p *structs.ACLPolicy) string { return p.Name }
	aclTokenAccessor = func(t *structs.ACLToken) string { return t.AccessorID }
	aclTokenSecret   = func(t *structs.ACLToken) string { return t.SecretID }
	aclRoleID        = func(r *structs.ACLRole) string { return r.ID }
	aclRoleName      = func(r *structs.ACLRole) string { return r.Name }
	aclMethodName    = func(m *structs.ACLAuthMethod) string { return m.Name }
	aclRuleID        = func(r *structs.ACLBindingRule) string { return r.ID }
	ottSecret        = func(o *structs.OneTimeToken) string { return o.OneTimeSecretID }
)

func aclSchema(tables map[string]*memdb.TableSchema) {
	tables[TableACLPolicies] = &memdb.TableSchema{Name: TableACLPolicies, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(aclPolicyName)}}
	tables[TableACLTokens] = &memdb.TableSchema{Name: TableACLTokens, Indexes: map[string]*memdb.IndexSchema{
		"id":     idIndex(aclTokenAccessor),
		"secret": {Name: "secret", Unique: true, Indexer: field("secret", aclTokenSecret)},
	}}
	tables[TableACLRoles] = &memdb.TableSchema{Name: TableACLRoles, Indexes: map[string]*memdb.IndexSchema{
		"id":   idIndex(aclRoleID),
		"name": {Name: "name", Unique: true, Indexer: field("name", aclRoleName)},
	}}
	tables[TableACLAuthMethods] = &memdb.TableSchema{Name: TableACLAuthMethods, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(aclMethodName)}}
	tables[TableACLBindingRule] = &memdb.TableSchema{Name: TableACLBindingRule, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(aclRuleID)}}
	tables[TableOneTimeTokens] = &memdb.TableSchema{Name: TableOneTimeTokens, Indexes: map[string]*memdb.IndexSchema{"id": idIndex(ottSecret)}}
}

// ACLIndex is the highest index of the ACL tables: it changes with every
// write to any of them.
func (s *reader) ACLIndex() (uint64, error) {
	var max uint64
	for _, t := range ACLTables {
		i, err := s.Index(t)
		if err != nil {
			return 0, err
		}
		max = maxU(max, i)
	}
	return max, nil
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// ACLBootstrapIndex is the index of the bootstrap entry (0: never done).
func (s *reader) ACLBootstrapIndex() (uint64, error) { return s.Index(indexACLBootstrap) }

// aclGet returns the row of table whose index equals key, or nil.
func (s *reader) aclGet(ws memdb.WatchSet, table, index, key string) (any, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	if ws == nil {
		ws = memdb.NewWatchSet()
	}
	return first(txn, ws, table, index, key)
}

// aclList returns every row of table, sorted by its id.
func (s *reader) aclList(ws memdb.WatchSet, table string) ([]any, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	if ws == nil {
		ws = memdb.NewWatchSet()
	}
	iter, err := get(txn, ws, table, "id")
	if err != nil {
		return nil, err
	}
	var out []any
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw)
	}
	return out, nil
}

func listAs[T any](rows []any, err error) ([]*T, error) {
	if err != nil {
		return nil, err
	}
	out := make([]*T, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.(*T))
	}
	return out, nil
}

func getAs[T any](raw any, err error) (*T, error) {
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*T), nil
}

// ACLPolicyByName returns a policy or nil.
func (s *reader) ACLPolicyByName(ws memdb.WatchSet, name string) (*structs.ACLPolicy, error) {
	return getAs[structs.ACLPolicy](s.aclGet(ws, TableACLPolicies, "id", name))
}

// ACLPolicies lists every policy by name.
func (s *reader) ACLPolicies(ws memdb.WatchSet) ([]*structs.ACLPolicy, error) {
	return listAs[structs.ACLPolicy](s.aclList(ws, TableACLPolicies))
}

// ACLTokenByAccessorID returns a token or nil.
func (s *reader) ACLTokenByAccessorID(ws memdb.WatchSet, id string) (*structs.ACLToken, error) {
	return getAs[structs.ACLToken](s.aclGet(ws, TableACLTokens, "id", id))
}

// ACLTokenBySecretID returns a token or nil.
func (s *reader) ACLTokenBySecretID(ws memdb.WatchSet, secret string) (*structs.ACLToken, error) {
	return getAs[structs.ACLToken](s.aclGet(ws, TableACLTokens, "secret", secret))
}

// ACLTokens lists every token by accessor ID.
func (s *reader) ACLTokens(ws memdb.WatchSet) ([]*structs.ACLToken, error) {
	return listAs[structs.ACLToken](s.aclList(ws, TableACLTokens))
}

// ACLRoleByID returns a role or nil.
func (s *reader) ACLRoleByID(ws memdb.WatchSet, id string) (*structs.ACLRole, error) {
	return getAs[structs.ACLRole](s.aclGet(ws, TableACLRoles, "id", id))
}

// ACLRoleByName returns a role or nil.
func (s *reader) ACLRoleByName(ws memdb.WatchSet, name string) (*structs.ACLRole, error) {
	return getAs[structs.ACLRole](s.aclGet(ws, TableACLRoles, "name", name))
}

// ACLRoles lists every role by ID.
func (s *reader) ACLRoles(ws memdb.WatchSet) ([]*structs.ACLRole, error) {
	return listAs[structs.ACLRole](s.aclList(ws, TableACLRoles))
}

// ACLAuthMethodByName returns an auth method or nil.
func (s *reader) ACLAuthMethodByName(ws memdb.WatchSet, name string) (*structs.ACLAuthMethod, error) {
	return getAs[structs.ACLAuthMethod](s.aclGet(ws, TableACLAuthMethods, "id", name))
}

// ACLAuthMethods lists every auth method by name.
func (s *reader) ACLAuthMethods(ws memdb.WatchSet) ([]*structs.ACLAuthMethod, error) {
	return listAs[structs.ACLAuthMethod](s.aclList(ws, TableACLAuthMethods))
}

// ACLBindingRuleByID returns a binding rule or nil.
func (s *reader) ACLBindingRuleByID(ws memdb.WatchSet, id string) (*structs.ACLBindingRule, error) {
	return getAs[structs.ACLBindingRule](s.aclGet(ws, TableACLBindingRule, "id", id))
}

// ACLBindingRules lists every binding rule by ID.
func (s *reader) ACLBindingRules(ws memdb.WatchSet) ([]*structs.ACLBindingRule, error) {
	return listAs[structs.ACLBindingRule](s.aclList(ws, TableACLBindingRule))
}

// OneTimeTokenBySecret returns a one-time token or nil.
func (s *reader) OneTimeTokenBySecret(ws memdb.WatchSet, secret string) (*structs.OneTimeToken, error) {
	return getAs[structs.OneTimeToken](s.aclGet(ws, TableOneTimeTokens, "id", secret))
}

// OneTimeTokens lists every one-time token.
func (s *reader) OneTimeTokens(ws memdb.WatchSet) ([]*structs.OneTimeToken, error) {
	return listAs[structs.OneTimeToken](s.aclList(ws, TableOneTimeTokens))
}

// aclUpsert inserts copies of rows with their indexes set: CreateIndex kept
// from the stored row of the same id, ModifyIndex = index.
func aclUpsert[T any](s *StateStore, index uint64, table string, rows []*T, id func(*T) string, idx func(*T) (*uint64, *uint64)) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	for _, in := range rows {
		if in == nil || id(in) == "" {
			return fmt.Errorf("state: upsert %s: missing row or id", table)
		}
		row := *in
		c, m := idx(&row)
		*c, *m = index, index
		raw, err := txn.First(table, "id", id(&row))
		if err != nil {
			return fmt.Errorf("state: %s lookup: %w", table, err)
		}
		if raw != nil {
			oc, _ := idx(raw.(*T))
			*c = *oc
		}
		if err := txn.Insert(table, &row); err != nil {
			return fmt.Errorf("state: %s insert: %w", table, err)
		}
	}
	if err := bumpIndex(txn, index, table); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// aclDelete deletes the rows of table with the given ids; missing ones are
// skipped (the RPC checked them before the entry was written).
func (s *StateStore) aclDelete(index uint64, table string, ids []string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	for _, id := range ids {
		raw, err := txn.First(table, "id", id)
		if err != nil {
			return fmt.Errorf("state: %s lookup: %w", table, err)
		}
		if raw == nil {
			continue
		}
		if err := txn.Delete(table, raw); err != nil {
			return fmt.Errorf("state: %s delete: %w", table, err)
		}
	}
	if err := bumpIndex(txn, index, table); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// UpsertACLPolicies stores policies.
func (s *StateStore) UpsertACLPolicies(index uint64, ps []*structs.ACLPolicy) error {
	return aclUpsert(s, index, TableACLPolicies, ps, aclPolicyName, func(p *structs.ACLPolicy) (*uint64, *uint64) { return &p.CreateIndex, &p.ModifyIndex })
}

// DeleteACLPolicies deletes policies by name.
func (s *StateStore) DeleteACLPolicies(index uint64, names []string) error {
	return s.aclDelete(index, TableACLPolicies, names)
}

// UpsertACLTokens stores tokens.
func (s *StateStore) UpsertACLTokens(index uint64, ts []*structs.ACLToken) error {
	return aclUpsert(s, index, TableACLTokens, ts, aclTokenAccessor, func(t *structs.ACLToken) (*uint64, *uint64) { return &t.CreateIndex, &t.ModifyIndex })
}

// DeleteACLTokens deletes tokens by accessor ID.
func (s *StateStore) DeleteACLTokens(index uint64, ids []string) error {
	return s.aclDelete(index, TableACLTokens, ids)
}

// UpsertBootstrapACLToken stores the first management token. It refuses when a
// bootstrap was done before, unless resetIndex equals that bootstrap's
// index (the reset file's contents).
func (s *StateStore) UpsertBootstrapACLToken(index, resetIndex uint64, tok *structs.ACLToken) error {
	done, err := s.ACLBootstrapIndex()
	if err != nil {
		return err
	}
	if done != 0 && done != resetIndex {
		return structs.NewErrCoded(400, "ACL bootstrap already done (reset index: %d)", done)
	}
	if err := s.UpsertACLTokens(index, []*structs.ACLToken{tok}); err != nil {
		return err
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	if err := txn.Insert(tableIndex, &IndexEntry{Key: indexACLBootstrap, Value: index}); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// UpsertACLRoles stores roles.
func (s *StateStore) UpsertACLRoles(index uint64, rs []*structs.ACLRole) error {
	return aclUpsert(s, index, TableACLRoles, rs, aclRoleID, func(r *structs.ACLRole) (*uint64, *uint64) { return &r.CreateIndex, &r.ModifyIndex })
}

// DeleteACLRoles deletes roles by ID.
func (s *StateStore) DeleteACLRoles(index uint64, ids []string) error {
	return s.aclDelete(index, TableACLRoles, ids)
}

// UpsertACLAuthMethods stores auth methods.
func (s *StateStore) UpsertACLAuthMethods(index uint64, ms []*structs.ACLAuthMethod) error {
	return aclUpsert(s, index, TableACLAuthMethods, ms, aclMethodName, func(m *structs.ACLAuthMethod) (*uint64, *uint64) { return &m.CreateIndex, &m.ModifyIndex })
}

// DeleteACLAuthMethods deletes auth methods by name.
func (s *StateStore) DeleteACLAuthMethods(index uint64, names []string) error {
	return s.aclDelete(index, TableACLAuthMethods, names)
}

// UpsertACLBindingRules stores binding rules.
func (s *StateStore) UpsertACLBindingRules(index uint64, rs []*structs.ACLBindingRule) error {
	return aclUpsert(s, index, TableACLBindingRule, rs, aclRuleID, func(r *structs.ACLBindingRule) (*uint64, *uint64) { return &r.CreateIndex, &r.ModifyIndex })
}

// DeleteACLBindingRules deletes binding rules by ID.
func (s *StateStore) DeleteACLBindingRules(index uint64, ids []string) error {
	return s.aclDelete(index, TableACLBindingRule, ids)
}

// UpsertOneTimeToken stores a one-time token.
func (s *StateStore) UpsertOneTimeToken(index uint64, o *structs.OneTimeToken) error {
	return aclUpsert(s, index, TableOneTimeTokens, []*structs.OneTimeToken{o}, ottSecret, func(o *structs.OneTimeToken) (*uint64, *uint64) { return &o.CreateIndex, &o.ModifyIndex })
}

// DeleteOneTimeToken deletes a one-time token (it was exchanged).
func (s *StateStore) DeleteOneTimeToken(index uint64, secret string) error {
	return s.aclDelete(index, TableOneTimeTokens, []string{secret})
}

// DeleteOneTimeTokens deletes expired one-time tokens by secret.
func (s *StateStore) DeleteOneTimeTokens(index uint64, secrets []string) error {
	return s.aclDelete(index, TableOneTimeTokens, secrets)
}

// ACLRestore loads one ACL row into its table.
func (r *StateRestore) ACLRestore(table string, row any) error { return r.insert(table, row) }

// ACLRows lists every row of an ACL table (FSM snapshots).
func (s *reader) ACLRows(table string) ([]any, error) { return s.aclList(nil, table) }
