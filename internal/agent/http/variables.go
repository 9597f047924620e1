package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/vars: variable metadata (?prefix, ?namespace, "*" for all).
func (s *server) variablesListRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.VariablesListRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.VariablesListResponse
	if err := s.cfg.RPC.RPC("Variables.List", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	out := make([]*api.VariableMetadata, 0, len(reply.Data))
	for _, m := range reply.Data {
		out = append(out, variableMetaToAPI(m))
	}
	return out, nil
}

// /v1/var/<path>: read (GET), write (PUT/POST, ?cas=, ?lock-acquire,
// ?lock-renew, ?lock-release), delete (DELETE, ?cas=).
func (s *server) variableRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/var/")
	if err != nil {
		return nil, err
	}
	path := strings.Trim(strings.Join(parts, "/"), "/")
	if path == "" {
		return nil, structs.NewErrCoded(400, "missing variable path")
	}
	switch {
	case r.Method == http.MethodGet:
		return s.variableRead(w, r, path)
	case isWrite(r.Method):
		return s.variableWrite(w, r, path)
	case r.Method == http.MethodDelete:
		return s.variableDelete(w, r, path)
	}
	return nil, errInvalidMethod
}

func (s *server) variableRead(w http.ResponseWriter, r *http.Request, path string) (any, error) {
	args := structs.VariablesReadRequest{Path: path}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.VariablesReadResponse
	if err := s.cfg.RPC.RPC("Variables.Read", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	if reply.Data == nil {
		return nil, structs.NewErrCoded(404, "variable not found")
	}
	return variableToAPI(reply.Data), nil
}

// casParam reads ?cas=<index>; ok is false when it is absent.
func casParam(r *http.Request) (uint64, bool, error) {
	v, ok := r.URL.Query()["cas"]
	if !ok {
		return 0, false, nil
	}
	if len(v) == 0 || v[0] == "" {
		return 0, false, structs.NewErrCoded(400, "cas requires an index value")
	}
	n, err := strconv.ParseUint(v[0], 10, 64)
	if err != nil {
		return 0, false, structs.NewErrCoded(400, "failed to parse cas value %q: %v", v[0], err)
	}
	return n, true, nil
}

func (s *server) variableWrite(w http.ResponseWriter, r *http.Request, path string) (any, error) {
	var in api.Variable
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	ops := 0
	op := structs.VarOpSet
	for _, name := range []string{"cas", structs.VarOpLockAcquire, "lock-renew", structs.VarOpLockRelease} {
		if q.Has(name) {
			ops++
			op = name
		}
	}
	if ops > 1 {
		return nil, structs.NewErrCoded(400, "only one of cas, lock-acquire, lock-renew and lock-release may be given")
	}
	dv, err := variableFromAPI(&in, path)
	if err != nil {
		return nil, err
	}
	args := structs.VariablesApplyRequest{Var: dv}
	s.parseWrite(r, &args.WriteRequest)
	if q.Get("namespace") != "" || dv.Namespace == "" {
		dv.Namespace = args.Namespace
	}
	switch op {
	case "cas":
		idx, _, err := casParam(r)
		if err != nil {
			return nil, err
		}
		dv.ModifyIndex, args.Op = idx, structs.VarOpCAS
	case "lock-renew":
		if dv.Lock == nil || dv.Lock.ID == "" {
			return nil, structs.NewErrCoded(400, "lock-renew requires the lock's ID in Lock.ID")
		}
		rargs := structs.VariablesRenewLockRequest{Path: path, LockID: dv.Lock.ID}
		rargs.WriteRequest = args.WriteRequest
		rargs.Namespace = dv.Namespace
		var reply structs.VariablesRenewLockResponse
		if err := s.cfg.RPC.RPC("Variables.RenewLock", &rargs, &reply); err != nil {
			return nil, err
		}
		setIndex(w, reply.Index)
		m := variableMetaToAPI(reply.VarMeta)
		if m.Lock != nil {
			m.Lock.ID = dv.Lock.ID
		}
		return m, nil
	default:
		args.Op = op
	}
	var reply structs.VariablesApplyResponse
	if err := s.cfg.RPC.RPC("Variables.Apply", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	switch reply.Result {
	case structs.VarOpResultConflict, structs.VarOpResultRedacted:
		return withStatus{code: http.StatusConflict, obj: variableToAPI(reply.Conflict)}, nil
	}
	if reply.Output == nil {
		return nil, nil
	}
	return variableToAPI(reply.Output), nil
}

func (s *server) variableDelete(w http.ResponseWriter, r *http.Request, path string) (any, error) {
	idx, hasCAS, err := casParam(r)
	if err != nil {
		return nil, err
	}
	args := structs.VariablesApplyRequest{Op: structs.VarOpDelete}
	s.parseWrite(r, &args.WriteRequest)
	args.Var = &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Namespace: args.Namespace, Path: path}}
	if hasCAS {
		args.Op, args.Var.ModifyIndex = structs.VarOpDeleteCAS, idx
	}
	var reply structs.VariablesApplyResponse
	if err := s.cfg.RPC.RPC("Variables.Apply", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	switch reply.Result {
	case structs.VarOpResultConflict, structs.VarOpResultRedacted:
		return withStatus{code: http.StatusConflict, obj: variableToAPI(reply.Conflict)}, nil
	}
	w.WriteHeader(http.StatusNoContent)
	return nil, nil
}

func variableFromAPI(in *api.Variable, path string) (*structs.VariableDecrypted, error) {
	if in.Path != "" && strings.Trim(in.Path, "/") != path {
		return nil, structs.NewErrCoded(400, "variable path %q in the body does not match the request path %q", in.Path, path)
	}
	out := &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{
		Namespace: in.Namespace, Path: path, ModifyIndex: in.ModifyIndex,
	}, Items: map[string]string(in.Items)}
	if in.Lock != nil {
		l := &structs.VariableLock{ID: in.Lock.ID}
		var err error
		if in.Lock.TTL != "" {
			if l.TTL, err = time.ParseDuration(in.Lock.TTL); err != nil {
				return nil, structs.NewErrCoded(400, "invalid Lock.TTL %q: %v", in.Lock.TTL, err)
			}
		}
		if in.Lock.LockDelay != "" {
			if l.LockDelay, err = time.ParseDuration(in.Lock.LockDelay); err != nil {
				return nil, structs.NewErrCoded(400, "invalid Lock.LockDelay %q: %v", in.Lock.LockDelay, err)
			}
		}
		out.Lock = l
	}
	return out, nil
}

func variableLockToAPI(l *structs.VariableLock) *api.VariableLock {
	if l == nil {
		return nil
	}
	return &api.VariableLock{ID: l.ID, TTL: l.TTL.String(), LockDelay: l.LockDelay.String()}
}

func variableMetaToAPI(m *structs.VariableMetadata) *api.VariableMetadata {
	if m == nil {
		return nil
	}
	return &api.VariableMetadata{Namespace: m.Namespace, Path: m.Path, CreateIndex: m.CreateIndex,
		ModifyIndex: m.ModifyIndex, CreateTime: m.CreateTime, ModifyTime: m.ModifyTime, Lock: variableLockToAPI(m.Lock)}
}

func variableToAPI(v *structs.VariableDecrypted) *api.Variable {
	if v == nil {
		return &api.Variable{}
	}
	return &api.Variable{Namespace: v.Namespace, Path: v.Path, CreateIndex: v.CreateIndex,
		ModifyIndex: v.ModifyIndex, CreateTime: v.CreateTime, ModifyTime: v.ModifyTime,
		Items: api.VariableItems(v.Items), Lock: variableLockToAPI(v.Lock)}
}
