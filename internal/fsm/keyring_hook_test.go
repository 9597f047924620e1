package fsm

import (
	"bytes"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

type recordingKeyring struct {
	material map[string][]byte
	deleted  []string
}

func (r *recordingKeyring) RootKeyApplied(k *structs.RootKey) {
	if len(k.PrivateKey) > 0 {
		r.material[k.KeyID] = append([]byte(nil), k.PrivateKey...)
	}
}
func (r *recordingKeyring) RootKeyDeleted(id string) { r.deleted = append(r.deleted, id) }

// TestKeyringHookMigratesOldShape: an old-shape snapshot (root key
// material inline) restores with the material handed to the keyring hook
// and the store, and the next snapshot, holding metadata only.
func TestKeyringHookMigratesOldShape(t *testing.T) {
	secret := []byte("inline-private-key-material")
	src := newFSM(t, nil) // no hook: the store keeps the material, as before the keystore
	apply(t, src, entry(t, 1, structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{
		Key: &structs.RootKey{KeyID: "k1", State: structs.RootKeyStateActive, PrivateKey: secret}}))
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	old := &bufSink{}
	if err := snap.Persist(old); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(old.Bytes(), secret) {
		t.Fatal("test setup: the old-shape snapshot should hold the material")
	}

	hook := &recordingKeyring{material: map[string][]byte{}}
	dst, err := New(Config{Keyring: hook})
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Restore(nopCloser{bytes.NewReader(old.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(hook.material["k1"], secret) {
		t.Fatalf("hook got %q, want the inline material", hook.material["k1"])
	}
	keys, _ := dst.State().RootKeys(nil)
	if len(keys) != 1 || len(keys[0].PrivateKey) != 0 {
		t.Fatalf("restored store: %+v", keys)
	}
	// A new old-shape entry is stripped the same way.
	apply(t, dst, entry(t, 2, structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{
		Key: &structs.RootKey{KeyID: "k2", State: structs.RootKeyStateInactive, PrivateKey: secret}}))
	snap2, err := dst.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	fresh := &bufSink{}
	if err := snap2.Persist(fresh); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(fresh.Bytes(), secret) {
		t.Fatal("a snapshot after migration still holds root key material")
	}
	apply(t, dst, entry(t, 3, structs.RootKeyDeleteRequestType, &structs.RootKeyDeleteRequest{KeyID: "k2"}))
	if len(hook.deleted) != 1 || hook.deleted[0] != "k2" {
		t.Fatalf("hook deletions: %v", hook.deleted)
	}
}
