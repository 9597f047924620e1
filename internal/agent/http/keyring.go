package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/operator/keyring/keys: the root keys' metadata.
func (s *server) keyringKeysRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.GenericRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.KeyringListRootKeyMetaResponse
	if err := s.cfg.RPC.RPC("Keyring.List", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	out := make([]*api.RootKeyMeta, 0, len(reply.Keys))
	for _, k := range reply.Keys {
		out = append(out, rootKeyMetaToAPI(k))
	}
	return out, nil
}

// /v1/operator/keyring/rotate (PUT/POST, ?full=true): a new active key.
func (s *server) keyringRotateRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	full, err := boolParam(r, "full", false)
	if err != nil {
		return nil, err
	}
	if algo := r.URL.Query().Get("algo"); algo != "" && algo != string(api.EncryptionAlgorithmAES256GCM) {
		return nil, structs.NewErrCoded(400, "unsupported algo %q: only %q", algo, api.EncryptionAlgorithmAES256GCM)
	}
	if r.URL.Query().Get("publish_time") != "" {
		return nil, structs.NewErrCoded(400, "publish_time (prepublished keys) is not supported")
	}
	args := structs.KeyringRotateRootKeyRequest{Full: full}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.KeyringRotateRootKeyResponse
	if err := s.cfg.RPC.RPC("Keyring.Rotate", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &struct{ Key *api.RootKeyMeta }{Key: rootKeyMetaToAPI(reply.Key)}, nil
}

// /v1/operator/keyring/key/<id> (DELETE): remove an inactive key.
func (s *server) keyringKeyRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodDelete {
		return nil, errInvalidMethod
	}
	parts, err := pathArgs(r, "/v1/operator/keyring/key/")
	if err != nil {
		return nil, err
	}
	if len(parts) != 1 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "missing key ID")
	}
	force, err := boolParam(r, "force", false)
	if err != nil {
		return nil, err
	}
	args := structs.KeyringDeleteRootKeyRequest{KeyID: parts[0], Force: force}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.GenericResponse
	if err := s.cfg.RPC.RPC("Keyring.Delete", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

func rootKeyMetaToAPI(k *structs.RootKeyMeta) *api.RootKeyMeta {
	if k == nil {
		return nil
	}
	return &api.RootKeyMeta{KeyID: k.KeyID, Algorithm: api.EncryptionAlgorithm(k.Algorithm), CreateTime: k.CreateTime,
		CreateIndex: k.CreateIndex, ModifyIndex: k.ModifyIndex, State: api.RootKeyState(k.State), PublishTime: k.PublishTime}
}
