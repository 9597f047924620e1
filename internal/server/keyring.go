package server

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Keyring serves the public halves of the cluster's signing keys.
type Keyring struct{ srv *Server }

// ListPublic returns every active public signing key (for JWKS).
func (k *Keyring) ListPublic(args *structs.GenericRequest, reply *structs.KeyringListPublicResponse) error {
	if done, err := k.srv.forward("Keyring.ListPublic", args.Region, true, args, reply); done {
		return err
	}
	return k.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		keys, err := st.RootKeys(ws)
		if err != nil {
			return err
		}
		reply.PublicKeys = reply.PublicKeys[:0]
		for _, key := range keys {
			if key = withMaterial(k.srv.keystore, key); key == nil {
				// Not yet fetched from the leader: served once it is.
				k.srv.wantKeyMaterial()
				continue
			}
			pub, err := publicKeyOf(key)
			if err != nil {
				return err
			}
			reply.PublicKeys = append(reply.PublicKeys, pub)
			if key.CreateTime > reply.PublishTime {
				reply.PublishTime = key.CreateTime
			}
		}
		reply.Index = maxIndex(st, "root_keys")
		return nil
	})
}

func publicKeyOf(key *structs.RootKey) (*structs.KeyringPublicKey, error) {
	priv, err := x509.ParsePKCS8PrivateKey(key.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("keyring: key %s: %w", key.KeyID, err)
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("keyring: key %s is not a signing key", key.KeyID)
	}
	der, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, err
	}
	return &structs.KeyringPublicKey{KeyID: key.KeyID, PublicKey: der, Algorithm: key.Algorithm,
		Use: "sig", CreateTime: key.CreateTime}, nil
}

// initializeKeyring creates the first root key through Raft when the
// cluster has no active key that can encrypt. The key lives in replicated
// state, so every server and every restart serves the same JWKS.
func (s *Server) initializeKeyring(stopCh chan struct{}, gen uint64) {
	for attempt := 0; ; attempt++ {
		select {
		case <-stopCh:
			return
		default:
		}
		if s.leaderGen.Load() != gen {
			return
		}
		_, err := activeRootKey(s.State(), s.keystore)
		if err == nil {
			return
		}
		if s.activeKeyMaterialMissing() {
			// The key exists; its material is being fetched.
			s.wantKeyMaterial()
			err = errKeyMaterialMissing
		} else {
			var key *structs.RootKey
			if key, err = s.createRootKey(); err == nil {
				// Keys from before variables existed (no encryption key)
				// only verify from now on.
				if err = s.setOldKeysState(key.KeyID, structs.RootKeyStateInactive); err == nil {
					return
				}
			}
		}
		s.logger.Warn("keyring initialization failed; retrying", "error", err)
		select {
		case <-stopCh:
			return
		case <-time.After(time.Duration(200*(attempt+1)) * time.Millisecond):
		}
	}
}

// createRootKey writes a new active root key (an AES-256 key for
// variables, an Ed25519 key for signing); the key before it becomes
// inactive in the same entry.
func (s *Server) createRootKey() (*structs.RootKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	aesKey := make([]byte, 32)
	if _, err := rand.Read(aesKey); err != nil {
		return nil, err
	}
	key := &structs.RootKey{KeyID: newID(), Algorithm: "EdDSA", CreateTime: time.Now().UnixNano(),
		State: structs.RootKeyStateActive}
	// The material goes to this server's keystore first; Raft carries the
	// metadata only, and the other servers fetch the material from here.
	if err := s.keystore.put(key.KeyID, &structs.RootKeyMaterial{PrivateKey: der, EncryptionKey: aesKey}); err != nil {
		return nil, err
	}
	_, idx, err := s.raftApply(structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{Key: key})
	if err != nil {
		return nil, err
	}
	key.CreateIndex, key.ModifyIndex = idx, idx
	return key, nil
}
