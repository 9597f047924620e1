package fsm

import (
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// KeyringHook is told about every root key the FSM applies, so that the
// state store (and from it, snapshots) holds key metadata only. Its
// methods run inside Apply and Restore: they must not block on the
// network (a server that lacks a key's material fetches it in the
// background).
type KeyringHook interface {
	// RootKeyApplied sees a key as Raft carries it. Entries and snapshots
	// from before the keystore carry the material inline: the hook keeps
	// it; the FSM then stores the key without it.
	RootKeyApplied(key *structs.RootKey)
	// RootKeyDeleted says a key left the keyring.
	RootKeyDeleted(keyID string)
}

// rootKeyMeta hands key to the keyring hook and returns what the store
// keeps: the key without its material.
func (f *FSM) rootKeyMeta(key *structs.RootKey) *structs.RootKey {
	if f.keyring == nil {
		return key
	}
	f.keyring.RootKeyApplied(key)
	if key.PrivateKey == nil && key.EncryptionKey == nil {
		return key
	}
	c := *key
	c.PrivateKey, c.EncryptionKey = nil, nil
	return &c
}

// restoreRootKeys moves the material of a restored snapshot's keys into
// the keystore. It runs before the store is published, so it may change
// the restored objects in place.
func (f *FSM) restoreRootKeys(st *state.StateStore) error {
	if f.keyring == nil {
		return nil
	}
	keys, err := st.RootKeys(nil)
	if err != nil {
		return err
	}
	for _, k := range keys {
		f.keyring.RootKeyApplied(k)
		k.PrivateKey, k.EncryptionKey = nil, nil
	}
	return nil
}
