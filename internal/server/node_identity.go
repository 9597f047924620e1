package server

import (
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/structs"
)

// Node identities (Nomad 1.11): a JWT the servers sign with the active root
// key for each client node, verifiable by anyone through the JWKS. A node
// gets one when it registers and a new one on a heartbeat that asks for it
// (ForceIdentityRenewal: it has none, its own is past half its life, or an
// operator asked with PUT /v1/client/identity/renew). Its lifetime is the
// node pool's node_identity_ttl (24 h when unset). Drover's clients still
// authenticate their RPCs with the node secret; the identity is what the
// node can show others (GET /v1/client/identity lists its claims).

// defaultNodeIdentityTTL is a node identity's lifetime when its pool sets none.
const defaultNodeIdentityTTL = 24 * time.Hour

// nodeIdentityClaims are the claims of a node identity, as Nomad names them:
// subject "node:<region>:<pool>:<node id>:default".
type nodeIdentityClaims struct {
	jwt.Claims
	NodeID         string `json:"nomad_node_id"`
	NodePool       string `json:"nomad_node_pool"`
	NodeClass      string `json:"nomad_node_class,omitempty"`
	NodeDatacenter string `json:"nomad_node_datacenter"`
}

// signNodeIdentity signs a new identity for node.
func (s *Server) signNodeIdentity(node *structs.Node, now time.Time) (string, error) {
	st := s.State()
	key, err := activeRootKey(st, s.keystore)
	if err != nil {
		return "", err
	}
	pool := node.NodePool
	if pool == "" {
		pool = structs.DefaultNodePool
	}
	ttl := defaultNodeIdentityTTL
	if p, err := st.NodePoolByName(nil, pool); err == nil && p != nil && p.NodeIdentityTTL > 0 {
		ttl = p.NodeIdentityTTL
	}
	c := nodeIdentityClaims{
		Claims: jwt.Claims{
			ID:        uuid.NewString(),
			Subject:   strings.Join([]string{"node", s.config.Region, pool, node.ID, "default"}, ":"),
			Audience:  jwt.Audience{defaultIdentityAudience},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			Expiry:    jwt.NewNumericDate(now.Add(ttl)),
		},
		NodeID: node.ID, NodePool: pool, NodeClass: node.NodeClass, NodeDatacenter: node.Datacenter,
	}
	return signWorkloadJWT(key, c)
}

// attachNodeIdentity signs an identity into reply. Failing to sign (no
// root key yet right after the first election) never fails the
// registration or heartbeat: the client asks again on its next heartbeat.
func (s *Server) attachNodeIdentity(node *structs.Node, reply *structs.NodeUpdateResponse) {
	tok, err := s.signNodeIdentity(node, time.Now())
	if err != nil {
		s.logger.Debug("no node identity signed, the node asks again at its next heartbeat", "node_id", node.ID, "error", err)
		return
	}
	reply.SignedIdentity = tok
}
