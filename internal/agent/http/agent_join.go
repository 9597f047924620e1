package httpapi

import (
	"net/http"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// Membership is the agent's gossip and server-list control: joining and
// force-leaving servers (server agents), and the servers a client talks to.
type Membership interface {
	// Join contacts the gossip pool at each address; a coded 501 on an
	// agent that runs no server.
	Join(addrs []string) (int, error)
	// ForceLeave marks a failed member as left (prune: forgets it now).
	ForceLeave(node string, prune bool) error
	// ClientServers lists the servers this agent's client uses (coded 501
	// without a client); SetClientServers replaces them.
	ClientServers() ([]string, error)
	SetClientServers(addrs []string) error
	// Keyring lists ("list") or installs, uses or removes a gossip
	// encryption key on every server.
	Keyring(op, key string) (*api.KeyringResponse, error)
}

// joinResponse is Nomad's /v1/agent/join answer.
type joinResponse struct {
	NumJoined int    `json:"num_joined"`
	Error     string `json:"error"`
}

var errNoMembership = structs.NewErrCoded(501, "membership is not available on this agent")

// /v1/agent/join?address=...: joins the servers' gossip pool; the answer
// carries the number joined and any error (200 either way, as Nomad).
func (s *server) agentJoinRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		return nil, errInvalidMethod
	}
	if s.cfg.Membership == nil {
		return nil, errNoMembership
	}
	addrs := r.URL.Query()["address"]
	if len(addrs) == 0 {
		return nil, structs.NewErrCoded(400, "missing address to join: give one or more ?address=")
	}
	n, err := s.cfg.Membership.Join(addrs)
	out := joinResponse{NumJoined: n}
	if err != nil {
		if code, _ := structs.ErrorCode(err); code == 501 {
			return nil, err
		}
		out.Error = err.Error()
	}
	return &out, nil
}

// /v1/agent/force-leave?node=...[&prune=true]: a failed server is marked as
// left (with prune, forgotten at once).
func (s *server) agentForceLeaveRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		return nil, errInvalidMethod
	}
	if s.cfg.Membership == nil {
		return nil, errNoMembership
	}
	node := r.URL.Query().Get("node")
	if node == "" {
		return nil, structs.NewErrCoded(400, "missing node to force leave: give ?node=")
	}
	prune, err := boolParam(r, "prune", false)
	if err != nil {
		return nil, err
	}
	return nil, s.cfg.Membership.ForceLeave(node, prune)
}

// /v1/agent/servers: GET lists the servers this agent's client uses; PUT
// ?address=... replaces them.
func (s *server) agentServersRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet && !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	if s.cfg.Membership == nil {
		return nil, errNoMembership
	}
	switch r.Method {
	case http.MethodGet:
		servers, err := s.cfg.Membership.ClientServers()
		if err != nil {
			return nil, err
		}
		return nonNil(servers), nil
	case http.MethodPut, http.MethodPost:
		addrs := r.URL.Query()["address"]
		if len(addrs) == 0 {
			return nil, structs.NewErrCoded(400, "missing server address: give one or more ?address=")
		}
		return nil, s.cfg.Membership.SetClientServers(addrs)
	default:
		return nil, errInvalidMethod
	}
}

// /v1/agent/keyring/{list,install,use,remove}: the gossip encryption keys
// of every server (list: GET; the others: PUT/POST {"Key": "<base64>"}).
func (s *server) agentKeyringRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	op := strings.TrimPrefix(r.URL.Path, "/v1/agent/keyring/")
	var key string
	switch op {
	case "list":
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
	case "install", "use", "remove":
		if r.Method != http.MethodPut && r.Method != http.MethodPost {
			return nil, errInvalidMethod
		}
		var body api.KeyringRequest
		if err := decodeBody(r, &body, false); err != nil {
			return nil, err
		}
		key = body.Key
	default:
		return nil, structs.NewErrCoded(404, "unknown keyring operation %q: list, install, use or remove", op)
	}
	if s.cfg.Membership == nil {
		return nil, errNoMembership
	}
	return s.cfg.Membership.Keyring(op, key)
}
