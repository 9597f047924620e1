package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// encrypter seals variable items with the keyring's root keys (AES-256-GCM,
// a fresh 96-bit nonce per write, the namespace and path as additional data
// so a ciphertext cannot be moved to another variable). Items are sealed on
// the server that takes the write, before the Raft entry: the log, the FSM
// and snapshots only ever hold ciphertext.
type encrypter struct {
	// ks holds the keys' material (keystore.go); the state store holds
	// only their metadata.
	ks    *keystore
	mu    sync.Mutex
	aeads map[string]cipher.AEAD // by key ID
}

func (e *encrypter) aead(key *structs.RootKey) (cipher.AEAD, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if a, ok := e.aeads[key.KeyID]; ok {
		return a, nil
	}
	if len(key.EncryptionKey) != 32 {
		return nil, fmt.Errorf("keyring: root key %s has no encryption key", key.KeyID)
	}
	block, err := aes.NewCipher(key.EncryptionKey)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if e.aeads == nil {
		e.aeads = map[string]cipher.AEAD{}
	}
	e.aeads[key.KeyID] = a
	return a, nil
}

func varAAD(ns, path string) []byte { return []byte(ns + "\x00" + path) }

type rootKeyReader interface {
	RootKeys(ws memdb.WatchSet) ([]*structs.RootKey, error)
}

// errKeyMaterialMissing: the keyring's newest active key is not yet in
// this server's keystore (it is being fetched from a peer).
var errKeyMaterialMissing = errors.New("keyring: the active root key's material is not yet on this server; it is being fetched from the leader, retry")

// withMaterial returns key with its material from ks, nil when ks lacks it.
func withMaterial(ks *keystore, key *structs.RootKey) *structs.RootKey {
	if len(key.PrivateKey) > 0 {
		return key // an old-shape key not yet applied through the hook
	}
	m := ks.get(key.KeyID)
	if m == nil {
		return nil
	}
	c := *key
	c.PrivateKey, c.EncryptionKey = m.PrivateKey, m.EncryptionKey
	return &c
}

// activeRootKey is the key new writes are encrypted and signed with, with
// its material.
func activeRootKey(st rootKeyReader, ks *keystore) (*structs.RootKey, error) {
	keys, err := st.RootKeys(nil)
	if err != nil {
		return nil, err
	}
	// The newest active key: a rotation writes the new key, then demotes
	// the ones before it in a second entry. Keys from before variables
	// (no encryption key) do not count.
	var active, newest *structs.RootKey
	for _, k := range keys {
		if k.State != structs.RootKeyStateActive || (newest != nil && k.CreateIndex <= newest.CreateIndex) {
			continue
		}
		newest = k
		if full := withMaterial(ks, k); full != nil && len(full.EncryptionKey) == 32 {
			active = full
		} else {
			active = nil
		}
	}
	if active != nil {
		return active, nil
	}
	if newest != nil && withMaterial(ks, newest) == nil {
		return nil, structs.NewErrCoded(500, "%s", errKeyMaterialMissing.Error())
	}
	return nil, structs.NewErrCoded(500, "keyring: no active root key yet (the leader creates one after its election)")
}

// encrypt seals items under the active key.
func (e *encrypter) encrypt(st rootKeyReader, ns, path string, items map[string]string) ([]byte, string, error) {
	key, err := activeRootKey(st, e.ks)
	if err != nil {
		return nil, "", err
	}
	plain, err := json.Marshal(items)
	if err != nil {
		return nil, "", err
	}
	a, err := e.aead(key)
	if err != nil {
		return nil, "", err
	}
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", err
	}
	return a.Seal(nonce, nonce, plain, varAAD(ns, path)), key.KeyID, nil
}

// decrypt opens a variable's items with the key that sealed them.
func (e *encrypter) decrypt(st rootKeyReader, v *structs.VariableEncrypted) (map[string]string, error) {
	keys, err := st.RootKeys(nil)
	if err != nil {
		return nil, err
	}
	var key *structs.RootKey
	for _, k := range keys {
		if k.KeyID == v.KeyID {
			key = k
		}
	}
	if key == nil {
		return nil, fmt.Errorf("keyring: variable %s is encrypted with root key %s, which no longer exists", v.Path, v.KeyID)
	}
	if key = withMaterial(e.ks, key); key == nil {
		return nil, structs.NewErrCoded(500, "keyring: root key %s of variable %s is not yet on this server; it is being fetched from the leader, retry", v.KeyID, v.Path)
	}
	a, err := e.aead(key)
	if err != nil {
		return nil, err
	}
	if len(v.Data) < a.NonceSize() {
		return nil, fmt.Errorf("keyring: variable %s: ciphertext too short", v.Path)
	}
	plain, err := a.Open(nil, v.Data[:a.NonceSize()], v.Data[a.NonceSize():], varAAD(v.Namespace, v.Path))
	if err != nil {
		return nil, fmt.Errorf("keyring: variable %s: %w", v.Path, err)
	}
	items := map[string]string{}
	if err := json.Unmarshal(plain, &items); err != nil {
		return nil, err
	}
	return items, nil
}
