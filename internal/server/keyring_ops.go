package server

import (
	"sort"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// rekeyBatch bounds the variables one rekey Raft entry carries.
const rekeyBatch = 64

func rootKeyMeta(k *structs.RootKey) *structs.RootKeyMeta {
	return &structs.RootKeyMeta{KeyID: k.KeyID, Algorithm: "aes256-gcm", CreateTime: k.CreateTime,
		CreateIndex: k.CreateIndex, ModifyIndex: k.ModifyIndex, State: k.State, PublishTime: k.PublishTime}
}

// List lists the root keys (metadata only), oldest first.
func (k *Keyring) List(args *structs.GenericRequest, reply *structs.KeyringListRootKeyMetaResponse) error {
	if done, err := k.srv.forward("Keyring.List", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	if err := k.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	return k.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		keys, err := st.RootKeys(ws)
		if err != nil {
			return err
		}
		reply.Keys = make([]*structs.RootKeyMeta, 0, len(keys))
		for _, key := range keys {
			reply.Keys = append(reply.Keys, rootKeyMeta(key))
		}
		sort.Slice(reply.Keys, func(i, j int) bool { return reply.Keys[i].CreateIndex < reply.Keys[j].CreateIndex })
		reply.Index = maxIndex(st, "root_keys")
		return nil
	})
}

// Rotate makes a new active key. With Full, the keys before it become
// deprecated and the leader re-encrypts every variable under the new key
// in batches, then marks them inactive.
func (k *Keyring) Rotate(args *structs.KeyringRotateRootKeyRequest, reply *structs.KeyringRotateRootKeyResponse) error {
	if done, err := k.srv.forward("Keyring.Rotate", args.Region, false, args, reply); done {
		return err
	}
	if err := k.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	key, err := k.srv.createRootKey()
	if err != nil {
		return err
	}
	reply.Key, reply.Index = rootKeyMeta(key), key.ModifyIndex
	to := structs.RootKeyStateInactive
	if args.Full {
		to = structs.RootKeyStateDeprecated
	}
	if err := k.srv.setOldKeysState(key.KeyID, to); err != nil {
		return err
	}
	if idx, err := k.srv.State().LatestIndex(); err == nil && idx > reply.Index {
		reply.Index = idx
	}
	if args.Full {
		go k.srv.rekeyVariables(key.KeyID)
	}
	return nil
}

// Delete removes a key that is not active and that no variable is still
// encrypted with (those would become unreadable: rotate with full first).
func (k *Keyring) Delete(args *structs.KeyringDeleteRootKeyRequest, reply *structs.GenericResponse) error {
	if done, err := k.srv.forward("Keyring.Delete", args.Region, false, args, reply); done {
		return err
	}
	if err := k.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	st := k.srv.State()
	keys, err := st.RootKeys(nil)
	if err != nil {
		return err
	}
	var found *structs.RootKey
	for _, key := range keys {
		if key.KeyID == args.KeyID {
			found = key
		}
	}
	if found == nil {
		return structs.NewErrCoded(404, "root key %q not found", args.KeyID)
	}
	if found.State == structs.RootKeyStateActive {
		return structs.NewErrCoded(400, "active root key %q cannot be deleted: rotate the keyring first", args.KeyID)
	}
	if n := variablesUnderKey(st, args.KeyID); n > 0 {
		return structs.NewErrCoded(400, "root key %q still encrypts %d variable(s): rotate with -full and wait for the rekey to finish", args.KeyID, n)
	}
	if n := allocsSignedBefore(st, found.ModifyIndex); n > 0 && !args.Force {
		return structs.NewErrCoded(400, "root key %q may have signed the workload identities of %d running allocation(s), which would stop verifying: use -force to remove it anyway", args.KeyID, n)
	}
	_, idx, err := k.srv.raftApply(structs.RootKeyDeleteRequestType, &structs.RootKeyDeleteRequest{KeyID: args.KeyID})
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

func variablesUnderKey(st *state.StateStore, keyID string) int {
	iter, err := st.Variables(nil)
	if err != nil {
		return 0
	}
	n := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if raw.(*structs.VariableEncrypted).KeyID == keyID {
			n++
		}
	}
	return n
}

// setOldKeysState writes state to on every key but keep that is not
// already in it (a deprecated key waiting for its rekey stays deprecated).
func (s *Server) setOldKeysState(keep, to string) error {
	keys, err := s.State().RootKeys(nil)
	if err != nil {
		return err
	}
	for _, key := range keys {
		if key.KeyID == keep || key.State == to || (to == structs.RootKeyStateInactive && key.State == structs.RootKeyStateDeprecated) {
			continue
		}
		c := *key
		c.State = to
		if _, _, err := s.raftApply(structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{Key: &c}); err != nil {
			return err
		}
	}
	return nil
}

// rekeyVariables re-encrypts every variable not under key active, in
// bounded batches, then marks the deprecated keys inactive. It stops when
// leadership is lost (the keys stay deprecated; the next rotate -full
// resumes).
func (s *Server) rekeyVariables(active string) {
	for {
		if !s.IsLeader() || s.isShutdown() {
			return
		}
		st := s.State()
		if cur, err := activeRootKey(st, s.keystore); err != nil || cur.KeyID != active {
			return // rotated again: that rotation's rekey takes over
		}
		iter, err := st.Variables(nil)
		if err != nil {
			s.logger.Warn("variable rekey failed", "error", err)
			return
		}
		var batch []*structs.VariableEncrypted
		for raw := iter.Next(); raw != nil && len(batch) < rekeyBatch; raw = iter.Next() {
			ev := raw.(*structs.VariableEncrypted)
			if ev.KeyID == active {
				continue
			}
			items, err := s.encrypter.decrypt(st, ev)
			if err != nil {
				s.logger.Warn("variable rekey: cannot decrypt", "path", ev.Path, "namespace", ev.Namespace, "error", err)
				continue
			}
			data, keyID, err := s.encrypter.encrypt(st, ev.Namespace, ev.Path, items)
			if err != nil {
				s.logger.Warn("variable rekey failed", "error", err)
				return
			}
			c := ev.Copy()
			c.Data, c.KeyID = data, keyID
			batch = append(batch, c)
		}
		if len(batch) == 0 {
			break
		}
		if _, _, err := s.raftApply(structs.VarRekeyRequestType, &structs.VarRekeyRequest{Vars: batch}); err != nil {
			s.logger.Warn("variable rekey failed", "error", err)
			select {
			case <-s.shutdownCh:
				return
			case <-time.After(time.Second):
			}
		}
	}
	keys, err := s.State().RootKeys(nil)
	if err != nil {
		return
	}
	for _, key := range keys {
		if key.State == structs.RootKeyStateDeprecated {
			c := *key
			c.State = structs.RootKeyStateInactive
			if _, _, err := s.raftApply(structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{Key: &c}); err != nil {
				s.logger.Warn("variable rekey: marking key inactive failed", "key_id", key.KeyID, "error", err)
			}
		}
	}
}

// allocsSignedBefore counts the running allocations created before index
// (when a key stopped being active): their tasks may still hold
// identities that key signed, and verifiers need its public half.
func allocsSignedBefore(st *state.StateStore, index uint64) int {
	iter, err := st.Allocs(nil)
	if err != nil {
		return 0
	}
	n := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if a := raw.(*structs.Allocation); a.CreateIndex < index && !a.TerminalStatus() {
			n++
		}
	}
	return n
}
