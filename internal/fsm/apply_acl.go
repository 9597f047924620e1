package fsm

import (
	"fmt"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// applyACL applies the ACL system's entries. Every ID, secret and time in
// them was chosen by the proposer.
func (f *FSM) applyACL(t structs.MessageType, buf []byte, index uint64) error {
	st := f.State()
	switch t {
	case structs.ACLPolicyUpsertRequestType:
		var req structs.ACLPolicyUpsertRequest
		if err := decode(buf, &req, "acl policy upsert"); err != nil {
			return err
		}
		return st.UpsertACLPolicies(index, req.Policies)
	case structs.ACLPolicyDeleteRequestType:
		return f.applyACLDelete(buf, "acl policy delete", func(n []string) error { return st.DeleteACLPolicies(index, n) })
	case structs.ACLTokenUpsertRequestType:
		var req structs.ACLTokenUpsertRequest
		if err := decode(buf, &req, "acl token upsert"); err != nil {
			return err
		}
		return st.UpsertACLTokens(index, req.Tokens)
	case structs.ACLTokenDeleteRequestType, structs.ACLTokenExpiredDeleteRequestType:
		return f.applyACLDelete(buf, "acl token delete", func(n []string) error { return st.DeleteACLTokens(index, n) })
	case structs.ACLTokenBootstrapRequestType:
		var req structs.ACLTokenBootstrapRequest
		if err := decode(buf, &req, "acl bootstrap"); err != nil {
			return err
		}
		return st.UpsertBootstrapACLToken(index, req.ResetIndex, req.Token)
	case structs.ACLRoleUpsertRequestType:
		var req structs.ACLRoleUpsertRequest
		if err := decode(buf, &req, "acl role upsert"); err != nil {
			return err
		}
		return st.UpsertACLRoles(index, req.Roles)
	case structs.ACLRoleDeleteRequestType:
		return f.applyACLDelete(buf, "acl role delete", func(n []string) error { return st.DeleteACLRoles(index, n) })
	case structs.ACLAuthMethodUpsertRequestType:
		var req structs.ACLAuthMethodUpsertRequest
		if err := decode(buf, &req, "acl auth method upsert"); err != nil {
			return err
		}
		return st.UpsertACLAuthMethods(index, req.AuthMethods)
	case structs.ACLAuthMethodDeleteRequestType:
		return f.applyACLDelete(buf, "acl auth method delete", func(n []string) error { return st.DeleteACLAuthMethods(index, n) })
	case structs.ACLBindingRuleUpsertRequestType:
		var req structs.ACLBindingRuleUpsertRequest
		if err := decode(buf, &req, "acl binding rule upsert"); err != nil {
			return err
		}
		return st.UpsertACLBindingRules(index, req.Rules)
	case structs.ACLBindingRuleDeleteRequestType:
		return f.applyACLDelete(buf, "acl binding rule delete", func(n []string) error { return st.DeleteACLBindingRules(index, n) })
	case structs.OneTimeTokenUpsertRequestType:
		var req structs.OneTimeTokenUpsertRequest
		if err := decode(buf, &req, "one-time token upsert"); err != nil {
			return err
		}
		return st.UpsertOneTimeToken(index, req.OneTimeToken)
	case structs.OneTimeTokenExpireRequestType:
		return f.applyACLDelete(buf, "one-time token expire", func(n []string) error { return st.DeleteOneTimeTokens(index, n) })
	case structs.OneTimeTokenExchangeRequestType:
		var req structs.OneTimeTokenExchangeRequest
		if err := decode(buf, &req, "one-time token exchange"); err != nil {
			return err
		}
		return st.DeleteOneTimeToken(index, req.OneTimeSecretID)
	}
	return fmt.Errorf("fsm: not an ACL message type %d", t)
}

func (f *FSM) applyACLDelete(buf []byte, what string, del func([]string) error) error {
	var req structs.ACLNamesRequest
	if err := decode(buf, &req, what); err != nil {
		return err
	}
	return del(req.Names)
}

// isACLType reports whether t is one of the ACL system's entries.
func isACLType(t structs.MessageType) bool {
	_, ok := aclApplyNames[t]
	return ok
}

// aclApplyNames are the ACL entries' metric names (Nomad's).
var aclApplyNames = map[structs.MessageType]string{
	structs.ACLPolicyUpsertRequestType:       "apply_acl_policy_upsert",
	structs.ACLPolicyDeleteRequestType:       "apply_acl_policy_delete",
	structs.ACLTokenUpsertRequestType:        "apply_acl_token_upsert",
	structs.ACLTokenDeleteRequestType:        "apply_acl_token_delete",
	structs.ACLTokenExpiredDeleteRequestType: "apply_acl_token_expired_delete",
	structs.ACLTokenBootstrapRequestType:     "apply_acl_token_bootstrap",
	structs.ACLRoleUpsertRequestType:         "apply_acl_role_upsert",
	structs.ACLRoleDeleteRequestType:         "apply_acl_role_delete",
	structs.ACLAuthMethodUpsertRequestType:   "apply_acl_auth_method_upsert",
	structs.ACLAuthMethodDeleteRequestType:   "apply_acl_auth_method_delete",
	structs.ACLBindingRuleUpsertRequestType:  "apply_acl_binding_rule_upsert",
	structs.ACLBindingRuleDeleteRequestType:  "apply_acl_binding_rule_delete",
	structs.OneTimeTokenUpsertRequestType:    "apply_one_time_token_upsert",
	structs.OneTimeTokenExchangeRequestType:  "apply_one_time_token_delete",
	structs.OneTimeTokenExpireRequestType:    "apply_one_time_token_expire",
}

// aclSnapshotTypes maps each ACL table to its snapshot record type (the
// numbers of its upsert message types, clear of the other records).
var aclSnapshotTypes = []struct {
	t     SnapshotType
	table string
	new   func() any
}{
	{ACLPolicySnapshot, state.TableACLPolicies, func() any { return new(structs.ACLPolicy) }},
	{ACLTokenSnapshot, state.TableACLTokens, func() any { return new(structs.ACLToken) }},
	{ACLRoleSnapshot, state.TableACLRoles, func() any { return new(structs.ACLRole) }},
	{ACLAuthMethodSnapshot, state.TableACLAuthMethods, func() any { return new(structs.ACLAuthMethod) }},
	{ACLBindingRuleSnapshot, state.TableACLBindingRule, func() any { return new(structs.ACLBindingRule) }},
	{OneTimeTokenSnapshot, state.TableOneTimeTokens, func() any { return new(structs.OneTimeToken) }},
}

// The ACL snapshot record types.
const (
	ACLPolicySnapshot      SnapshotType = 19
	ACLTokenSnapshot       SnapshotType = 21
	ACLRoleSnapshot        SnapshotType = 24
	ACLAuthMethodSnapshot  SnapshotType = 43
	ACLBindingRuleSnapshot SnapshotType = 45
	OneTimeTokenSnapshot   SnapshotType = 47
)
