package httpapi

import (
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// Conversions between the ACL objects' wire (api) and engine forms.

func policyToAPI(p *structs.ACLPolicy) *api.ACLPolicy {
	return &api.ACLPolicy{Name: p.Name, Description: p.Description, Rules: p.Rules, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}

// policyWire is a policy read as Nomad answers it: the api fields and
// RulesJSON, the parsed rules with each block's `policy` shorthand expanded
// into capabilities. Nomad's web UI (and Drover's) reads RulesJSON to offer
// only the actions the token's policies allow.
type policyWire struct {
	*api.ACLPolicy
	RulesJSON *acl.Policy
}

func policyToWire(p *structs.ACLPolicy) *policyWire {
	out := &policyWire{ACLPolicy: policyToAPI(p)}
	if parsed, err := acl.Parse(p.Rules); err == nil {
		out.RulesJSON = parsed.Expanded()
	}
	return out
}

func tokenToAPI(t *structs.ACLToken) *api.ACLToken {
	if t == nil {
		return nil
	}
	out := &api.ACLToken{AccessorID: t.AccessorID, SecretID: t.SecretID, Name: t.Name, Type: t.Type,
		Policies: t.Policies, Global: t.Global, CreateTime: t.CreateTime, ExpirationTime: t.ExpirationTime,
		ExpirationTTL: t.ExpirationTTL, CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex}
	for _, l := range t.Roles {
		out.Roles = append(out.Roles, &api.ACLTokenRoleLink{ID: l.ID, Name: l.Name})
	}
	return out
}

func tokenFromAPI(t *api.ACLToken) *structs.ACLToken {
	out := &structs.ACLToken{AccessorID: t.AccessorID, SecretID: t.SecretID, Name: t.Name, Type: t.Type,
		Policies: t.Policies, Global: t.Global, ExpirationTime: t.ExpirationTime, ExpirationTTL: t.ExpirationTTL}
	for _, l := range t.Roles {
		if l != nil {
			out.Roles = append(out.Roles, &structs.ACLTokenRoleLink{ID: l.ID, Name: l.Name})
		}
	}
	return out
}

func roleToAPI(r *structs.ACLRole) *api.ACLRole {
	out := &api.ACLRole{ID: r.ID, Name: r.Name, Description: r.Description, CreateIndex: r.CreateIndex, ModifyIndex: r.ModifyIndex}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, &api.ACLRolePolicyLink{Name: p.Name})
	}
	return out
}

func roleFromAPI(r *api.ACLRole) *structs.ACLRole {
	out := &structs.ACLRole{ID: r.ID, Name: r.Name, Description: r.Description}
	for _, p := range r.Policies {
		if p != nil {
			out.Policies = append(out.Policies, &structs.ACLRolePolicyLink{Name: p.Name})
		}
	}
	return out
}

func authMethodToAPI(m *structs.ACLAuthMethod) *api.ACLAuthMethod {
	return &api.ACLAuthMethod{Name: m.Name, Type: m.Type, TokenLocality: m.TokenLocality, TokenNameFormat: m.TokenNameFormat,
		MaxTokenTTL: m.MaxTokenTTL, Default: m.Default, Config: m.Config, CreateTime: m.CreateTime, ModifyTime: m.ModifyTime,
		CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex}
}

func authMethodFromAPI(m *api.ACLAuthMethod) *structs.ACLAuthMethod {
	return &structs.ACLAuthMethod{Name: m.Name, Type: m.Type, TokenLocality: m.TokenLocality, TokenNameFormat: m.TokenNameFormat,
		MaxTokenTTL: m.MaxTokenTTL, Default: m.Default, Config: m.Config}
}

func bindingRuleToAPI(b *structs.ACLBindingRule) *api.ACLBindingRule {
	return &api.ACLBindingRule{ID: b.ID, Description: b.Description, AuthMethod: b.AuthMethod, Selector: b.Selector,
		BindType: b.BindType, BindName: b.BindName, CreateTime: b.CreateTime, ModifyTime: b.ModifyTime,
		CreateIndex: b.CreateIndex, ModifyIndex: b.ModifyIndex}
}

func bindingRuleFromAPI(b *api.ACLBindingRule) *structs.ACLBindingRule {
	return &structs.ACLBindingRule{ID: b.ID, Description: b.Description, AuthMethod: b.AuthMethod, Selector: b.Selector,
		BindType: b.BindType, BindName: b.BindName}
}
