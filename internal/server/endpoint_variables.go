package server

import (
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Variables serves encrypted key/value documents. Items are encrypted here,
// on the leader, before the Raft entry, and decrypted only to answer a
// caller whose ACL may read them.
type Variables struct{ srv *Server }

// variableACL resolves the caller: management when ACLs are off.
func (s *Server) variableACL(secret string) (*acl.ACL, error) {
	if !s.config.ACLEnabled {
		return acl.ManagementACL, nil
	}
	_, a, err := s.resolveToken(secret)
	return a, err
}

// Apply performs one write: set, cas, delete, delete-cas, lock-acquire,
// lock-release. A CAS index or lock that does not match answers Result
// "conflict" with the current variable (its items redacted unless the
// caller may read them), not an error.
func (v *Variables) Apply(args *structs.VariablesApplyRequest, reply *structs.VariablesApplyResponse) error {
	if done, err := v.srv.forward("Variables.Apply", args.Region, false, args, reply); done {
		return err
	}
	in := args.Var
	if in == nil {
		return structs.NewErrCoded(400, "variable missing")
	}
	ns := namespaceOf(in.Namespace)
	if in.Namespace == "" {
		ns = namespaceOf(args.Namespace)
	}
	if err := structs.ValidateVariablePath(in.Path); err != nil {
		return err
	}
	capability := acl.VariablesCapabilityWrite
	switch args.Op {
	case structs.VarOpSet, structs.VarOpCAS, structs.VarOpLockAcquire, structs.VarOpLockRelease:
	case structs.VarOpDelete, structs.VarOpDeleteCAS:
		capability = acl.VariablesCapabilityDestroy
	default:
		return structs.NewErrCoded(400, "unknown variable operation %q", args.Op)
	}
	a, err := v.srv.variableACL(args.AuthToken)
	if err != nil {
		return err
	}
	if !a.AllowVariableOperation(ns, in.Path, capability) {
		return errPermission
	}
	st := v.srv.State()
	if n, err := st.NamespaceByName(nil, ns); err != nil {
		return err
	} else if n == nil {
		return structs.NewErrCoded(400, "namespace %q not found", ns)
	}

	enc := &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{
		Namespace: ns, Path: in.Path, ModifyIndex: in.ModifyIndex, ModifyTime: time.Now().UnixNano(),
	}}
	if in.Lock != nil {
		l := *in.Lock
		enc.Lock = &l
	}
	sealItems := func() error {
		data, keyID, err := v.srv.encrypter.encrypt(st, ns, in.Path, in.Items)
		if err != nil {
			return err
		}
		if len(data) > structs.MaxVariableSize {
			return structs.NewErrCoded(400, "variables are limited to %d bytes in total size (encrypted), this one is %d", structs.MaxVariableSize, len(data))
		}
		enc.Data, enc.KeyID = data, keyID
		return nil
	}
	switch args.Op {
	case structs.VarOpSet, structs.VarOpCAS:
		if err := structs.ValidateVariableItems(in.Items); err != nil {
			return err
		}
		if err := sealItems(); err != nil {
			return err
		}
	case structs.VarOpLockAcquire:
		if enc.Lock == nil {
			enc.Lock = &structs.VariableLock{}
		}
		if err := structs.ValidateVariableLock(enc.Lock); err != nil {
			return err
		}
		enc.Lock.ID = newID()
		if len(in.Items) > 0 {
			if err := sealItems(); err != nil {
				return err
			}
		}
		if until := v.srv.varLocks.delayedUntil(ns, in.Path); !until.IsZero() {
			return structs.NewErrCoded(409, "lock on %s is in its lock delay until %s", in.Path, until.UTC().Format(time.RFC3339))
		}
		if len(in.Items) == 0 {
			if err := v.createEmptyForLock(st, ns, in.Path, enc.ModifyTime); err != nil {
				return err
			}
		}
	case structs.VarOpLockRelease:
		if enc.Lock == nil || enc.Lock.ID == "" {
			return structs.NewErrCoded(400, "lock release requires the lock's ID")
		}
	}

	raw, index, err := v.srv.raftApply(structs.VarApplyStateRequestType, &structs.VarApplyStateRequest{Op: args.Op, Var: enc})
	if err != nil {
		return err
	}
	resp, _ := raw.(*structs.VarApplyStateResponse)
	if resp == nil {
		return structs.NewErrCoded(500, "variable apply: no answer from the state store")
	}
	reply.Op, reply.Result, reply.Index = args.Op, resp.Result, index
	canRead := a.AllowVariableOperation(ns, in.Path, acl.VariablesCapabilityRead)
	if resp.Result == structs.VarOpResultConflict {
		if resp.Conflict == nil {
			reply.Conflict = &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Namespace: ns, Path: in.Path}}
			return nil
		}
		reply.Conflict = &structs.VariableDecrypted{VariableMetadata: *resp.Conflict.Metadata()}
		if canRead {
			items, err := v.srv.encrypter.decrypt(st, resp.Conflict)
			if err != nil {
				return err
			}
			reply.Conflict.Items = items
		} else {
			reply.Result = structs.VarOpResultRedacted
		}
		if reply.Conflict.Lock != nil {
			reply.Conflict.Lock.ID = "" // only the holder knows it
		}
		return nil
	}
	switch args.Op {
	case structs.VarOpLockAcquire:
		v.srv.varLocks.track(ns, in.Path, resp.Written.Lock)
	case structs.VarOpLockRelease, structs.VarOpDelete, structs.VarOpDeleteCAS:
		v.srv.varLocks.untrack(ns, in.Path)
	}
	if resp.Written != nil {
		out := &structs.VariableDecrypted{VariableMetadata: *resp.Written.Metadata()}
		if args.Op != structs.VarOpLockRelease && canRead {
			items, err := v.srv.encrypter.decrypt(v.srv.State(), resp.Written)
			if err != nil {
				return err
			}
			out.Items = items
		}
		reply.Output = out
	}
	return nil
}

// createEmptyForLock creates the variable at path with no items when it
// does not exist, so that a lock-acquire without items (the official
// client's Locks and LockLeaser send none: "the variable doesn't need to
// exist") finds one to lock, as Nomad creates it. It is a create-only
// check-and-set (index 0): a variable written meanwhile is left as it is
// (the conflict is not an error), and the acquire that follows keeps the
// items it finds.
func (v *Variables) createEmptyForLock(st *state.StateStore, ns, path string, now int64) error {
	if cur, err := st.VariableByPath(nil, ns, path); err != nil || cur != nil {
		return err
	}
	data, keyID, err := v.srv.encrypter.encrypt(st, ns, path, map[string]string{})
	if err != nil {
		return err
	}
	enc := &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{
		Namespace: ns, Path: path, ModifyTime: now, // the acquire's time: created as it is locked
	}, Data: data, KeyID: keyID}
	_, _, err = v.srv.raftApply(structs.VarApplyStateRequestType, &structs.VarApplyStateRequest{Op: structs.VarOpCAS, Var: enc})
	return err
}

// RenewLock restarts the TTL of a held lock. Only the leader holds the
// timers; a lock that already expired (or another lock) is a 409.
func (v *Variables) RenewLock(args *structs.VariablesRenewLockRequest, reply *structs.VariablesRenewLockResponse) error {
	if done, err := v.srv.forward("Variables.RenewLock", args.Region, false, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	if err := structs.ValidateVariablePath(args.Path); err != nil {
		return err
	}
	a, err := v.srv.variableACL(args.AuthToken)
	if err != nil {
		return err
	}
	if !a.AllowVariableOperation(ns, args.Path, acl.VariablesCapabilityWrite) {
		return errPermission
	}
	cur, err := v.srv.State().VariableByPath(nil, ns, args.Path)
	if err != nil {
		return err
	}
	if cur == nil {
		return structs.NewErrCoded(404, "variable not found")
	}
	if cur.Lock == nil || cur.Lock.ID != args.LockID || !v.srv.varLocks.renew(ns, args.Path, args.LockID) {
		return structs.NewErrCoded(409, "variable %s is not locked by lock %q (it may have expired)", args.Path, args.LockID)
	}
	reply.VarMeta = cur.Metadata()
	reply.Index = cur.ModifyIndex
	return nil
}

// Read returns one variable, decrypted (Data nil when there is none).
func (v *Variables) Read(args *structs.VariablesReadRequest, reply *structs.VariablesReadResponse) error {
	if done, err := v.srv.forward("Variables.Read", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	if err := structs.ValidateVariablePath(args.Path); err != nil {
		return err
	}
	a, err := v.srv.variableACL(args.AuthToken)
	if err != nil {
		return err
	}
	if !a.AllowVariableOperation(ns, args.Path, acl.VariablesCapabilityRead) {
		return errPermission
	}
	return v.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		cur, err := st.VariableByPath(ws, ns, args.Path)
		if err != nil {
			return err
		}
		reply.Data = nil
		reply.Index = maxIndex(st, "variables")
		if cur == nil {
			return nil
		}
		items, err := v.srv.encrypter.decrypt(st, cur)
		if err != nil {
			return err
		}
		out := &structs.VariableDecrypted{VariableMetadata: *cur.Metadata(), Items: items}
		if out.Lock != nil && !a.IsManagement() {
			out.Lock.ID = ""
		}
		reply.Data = out
		reply.Index = cur.ModifyIndex
		return nil
	})
}

// List lists variable metadata in a namespace ("*": every namespace the
// caller may list in) under ?prefix, paginated; paths the caller may not
// list are left out.
func (v *Variables) List(args *structs.VariablesListRequest, reply *structs.VariablesListResponse) error {
	if done, err := v.srv.forward("Variables.List", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	a, err := v.srv.variableACL(args.AuthToken)
	if err != nil {
		return err
	}
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	return v.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		iter, err := st.Variables(ws)
		if err != nil {
			return err
		}
		var all []*structs.VariableMetadata
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			ev := raw.(*structs.VariableEncrypted)
			if ns != "*" && ev.Namespace != ns {
				continue
			}
			if !strings.HasPrefix(ev.Path, args.Prefix) {
				continue
			}
			if !a.AllowVariableOperation(ev.Namespace, ev.Path, acl.VariablesCapabilityList) {
				continue
			}
			m := ev.Metadata()
			if m.Lock != nil && !a.IsManagement() {
				m.Lock.ID = ""
			}
			all = append(all, m)
		}
		page, next, err := paginate(all, &args.QueryOptions,
			func(m *structs.VariableMetadata) string { return m.Namespace + "." + m.Path }, keep[*structs.VariableMetadata](filter))
		if err != nil {
			return err
		}
		if page == nil {
			page = []*structs.VariableMetadata{}
		}
		reply.Data, reply.NextToken = page, next
		reply.Index = maxIndex(st, "variables")
		return nil
	})
}

// expireVarLock releases a lock whose TTL ran out (the leader's timer).
func (s *Server) expireVarLock(ns, path, lockID string) {
	enc := &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{
		Namespace: ns, Path: path, ModifyTime: time.Now().UnixNano(), Lock: &structs.VariableLock{ID: lockID},
	}}
	if _, _, err := s.raftApply(structs.VarApplyStateRequestType, &structs.VarApplyStateRequest{Op: structs.VarOpLockRelease, Var: enc}); err != nil {
		s.logger.Warn("releasing an expired variable lock failed", "path", path, "namespace", ns, "error", err)
	}
}

// restoreVarLocks starts the TTL of every held lock on a new leader.
func (s *Server) restoreVarLocks() {
	var held []*structs.VariableEncrypted
	if iter, err := s.State().Variables(nil); err == nil {
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if ev := raw.(*structs.VariableEncrypted); ev.Lock != nil {
				held = append(held, ev)
			}
		}
	}
	s.varLocks.setEnabled(true, held)
}
