package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

type aclWireEvent struct {
	Topic, Type, Key string
	Payload          struct {
		ACLToken  *api.ACLToken
		ACLPolicy *api.ACLPolicy
		ACLRole   *api.ACLRole
	}
}

// ACL token events never carry the secret; policy and role events carry
// the object under Nomad's payload keys.
func TestACLEvents(t *testing.T) {
	tok := &structs.ACLToken{AccessorID: "acc-1", SecretID: "very-secret", Name: "ci", Type: "client", Policies: []string{"p"}}
	e := fromChange(TypeACLTokenUpserted, 9, &memdb.Change{Table: "acl_token", After: tok})
	if e == nil {
		t.Fatal("no event for a token upsert")
	}
	raw := e.JSON()
	if strings.Contains(string(raw), "very-secret") {
		t.Fatalf("the token event carries the secret: %s", raw)
	}
	var got aclWireEvent
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Topic != TopicACLToken || got.Key != "acc-1" || got.Payload.ACLToken == nil || got.Payload.ACLToken.AccessorID != "acc-1" || tok.SecretID != "very-secret" {
		t.Fatalf("token event %s (stored secret %q)", raw, tok.SecretID)
	}
	e = fromChange(TypeACLPolicyDeleted, 10, &memdb.Change{Table: "acl_policy", Before: &structs.ACLPolicy{Name: "p", Rules: `node { policy = "read" }`}})
	got = aclWireEvent{}
	if err := json.Unmarshal(e.JSON(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Topic != TopicACLPolicy || got.Type != "ACLPolicyDeleted" || got.Payload.ACLPolicy == nil || got.Payload.ACLPolicy.Name != "p" {
		t.Fatalf("policy event %s", e.JSON())
	}
	e = fromChange(TypeACLRoleUpserted, 11, &memdb.Change{Table: "acl_role", After: &structs.ACLRole{ID: "r1", Name: "ops"}})
	got = aclWireEvent{}
	if err := json.Unmarshal(e.JSON(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Key != "r1" || got.Payload.ACLRole == nil || got.Payload.ACLRole.Name != "ops" {
		t.Fatalf("role event %s", e.JSON())
	}
	if !Publishes(structs.ACLTokenBootstrapRequestType) || !Publishes(structs.ACLRoleDeleteRequestType) {
		t.Fatal("ACL entries do not publish")
	}
}
