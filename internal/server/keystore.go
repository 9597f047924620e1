package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/drover-project/drover/internal/atomicfile"
	"github.com/drover-project/drover/internal/structs"
)

// keystore holds the material of the keyring's root keys on one server.
// Raft carries only key metadata; the material lives here, in memory and,
// with a data dir, under <data_dir>/server/keystore/<key id>.nks.json,
// sealed (AES-256-GCM, the key ID as additional data) with this server's
// own key-encryption key, which sits beside it in kek (0600). A key is
// written to disk before it is kept in memory, so what a server serves
// survives its restart. Without a data dir (dev mode) it is memory only.
type keystore struct {
	dir string // "" in dev mode

	mu   sync.RWMutex
	kek  cipher.AEAD
	keys map[string]*structs.RootKeyMaterial
}

const (
	keystoreKEKFile = "kek"
	keystoreSuffix  = ".nks.json"
	// keystoreProvider names the wrapping, as Nomad's "aead" provider.
	keystoreProvider = "aead"
)

// wrappedKey is one .nks.json file.
type wrappedKey struct {
	KeyID    string
	Provider string
	// Wrapped is nonce || AES-256-GCM(KEK, JSON of RootKeyMaterial).
	Wrapped []byte
}

// openKeystore loads (or creates) the keystore under dir; dir "" keeps keys
// in memory only.
func openKeystore(dir string) (*keystore, error) {
	ks := &keystore{dir: dir, keys: map[string]*structs.RootKeyMaterial{}}
	if dir == "" {
		return ks, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	kek, err := loadOrCreateKEK(filepath.Join(dir, keystoreKEKFile))
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	if ks.kek, err = cipher.NewGCM(block); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), keystoreSuffix) {
			continue
		}
		id := strings.TrimSuffix(e.Name(), keystoreSuffix)
		m, err := ks.readWrapped(filepath.Join(dir, e.Name()), id)
		if err != nil {
			return nil, err
		}
		ks.keys[id] = m
	}
	return ks, nil
}

func loadOrCreateKEK(path string) ([]byte, error) {
	kek, err := os.ReadFile(path)
	if err == nil {
		if len(kek) != 32 {
			return nil, fmt.Errorf("keystore: %s: key-encryption key is %d bytes, want 32", path, len(kek))
		}
		return kek, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	kek = make([]byte, 32)
	if _, err := rand.Read(kek); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(path, kek); err != nil {
		return nil, err
	}
	return kek, nil
}

// writeFileAtomic writes data to path (0600) atomically.
func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("keystore: %w", err)
	}
	return nil
}

func (ks *keystore) readWrapped(path, id string) (*structs.RootKeyMaterial, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	var w wrappedKey
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("keystore: %s: %w", path, err)
	}
	if w.KeyID != id || w.Provider != keystoreProvider {
		return nil, fmt.Errorf("keystore: %s: key %q with provider %q, want key %q with provider %q", path, w.KeyID, w.Provider, id, keystoreProvider)
	}
	n := ks.kek.NonceSize()
	if len(w.Wrapped) < n {
		return nil, fmt.Errorf("keystore: %s: wrapped key too short", path)
	}
	plain, err := ks.kek.Open(nil, w.Wrapped[:n], w.Wrapped[n:], []byte(id))
	if err != nil {
		return nil, fmt.Errorf("keystore: %s: cannot unwrap with this server's key-encryption key: %w", path, err)
	}
	m := new(structs.RootKeyMaterial)
	if err := json.Unmarshal(plain, m); err != nil {
		return nil, fmt.Errorf("keystore: %s: %w", path, err)
	}
	return m, nil
}

// has reports whether the keystore holds id's material.
func (ks *keystore) has(id string) bool {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	_, ok := ks.keys[id]
	return ok
}

// get returns id's material, nil when the keystore lacks it.
func (ks *keystore) get(id string) *structs.RootKeyMaterial {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	return ks.keys[id]
}

// put stores id's material: wrapped to disk first (with a data dir), then
// in memory. Storing a key it already holds is a no-op.
func (ks *keystore) put(id string, m *structs.RootKeyMaterial) error {
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return fmt.Errorf("keystore: invalid key ID %q", id)
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if _, ok := ks.keys[id]; ok {
		return nil
	}
	c := &structs.RootKeyMaterial{PrivateKey: append([]byte(nil), m.PrivateKey...),
		EncryptionKey: append([]byte(nil), m.EncryptionKey...)}
	if ks.dir != "" {
		plain, err := json.Marshal(c)
		if err != nil {
			return err
		}
		nonce := make([]byte, ks.kek.NonceSize(), ks.kek.NonceSize()+len(plain)+ks.kek.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return err
		}
		w := wrappedKey{KeyID: id, Provider: keystoreProvider, Wrapped: ks.kek.Seal(nonce, nonce, plain, []byte(id))}
		raw, err := json.Marshal(&w)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(filepath.Join(ks.dir, id+keystoreSuffix), raw); err != nil {
			return err
		}
	}
	ks.keys[id] = c
	return nil
}

// remove forgets id's material (the key was deleted from the keyring).
func (ks *keystore) remove(id string) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	delete(ks.keys, id)
	if ks.dir != "" && id != "" && !strings.ContainsAny(id, `/\`) {
		os.Remove(filepath.Join(ks.dir, id+keystoreSuffix))
	}
}
