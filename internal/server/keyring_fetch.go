package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// keyringHook keeps root key material out of the FSM's store: material an
// old-shape entry or snapshot carries goes to the keystore; a key whose
// material this server lacks wakes the background fetch.
type keyringHook struct{ s *Server }

func (h keyringHook) RootKeyApplied(key *structs.RootKey) {
	if len(key.PrivateKey) > 0 || len(key.EncryptionKey) > 0 {
		err := h.s.keystore.put(key.KeyID, &structs.RootKeyMaterial{PrivateKey: key.PrivateKey, EncryptionKey: key.EncryptionKey})
		if err == nil {
			return
		}
		h.s.logger.Error("keyring: cannot store root key material; fetching it from a peer", "key_id", key.KeyID, "error", err)
	} else if h.s.keystore.has(key.KeyID) {
		return
	}
	h.s.wantKeyMaterial()
}

func (h keyringHook) RootKeyDeleted(keyID string) { h.s.keystore.remove(keyID) }

// wantKeyMaterial wakes the fetch without blocking (the FSM calls it).
func (s *Server) wantKeyMaterial() {
	select {
	case s.keyWant <- struct{}{}:
	default:
	}
}

// missingKeyMaterial lists the keys in the keyring this server has no
// material for.
func (s *Server) missingKeyMaterial() []string {
	keys, err := s.State().RootKeys(nil)
	if err != nil {
		return nil
	}
	var out []string
	for _, k := range keys {
		if len(k.PrivateKey) == 0 && !s.keystore.has(k.KeyID) {
			out = append(out, k.KeyID)
		}
	}
	return out
}

// activeKeyMaterialMissing reports whether the newest active key exists
// but its material is not (yet) on this server.
func (s *Server) activeKeyMaterialMissing() bool {
	keys, err := s.State().RootKeys(nil)
	if err != nil {
		return false
	}
	var newest *structs.RootKey
	for _, k := range keys {
		if k.State == structs.RootKeyStateActive && (newest == nil || k.CreateIndex > newest.CreateIndex) {
			newest = k
		}
	}
	return newest != nil && withMaterial(s.keystore, newest) == nil
}

// fetchKeyMaterial runs for the server's life: whenever the keyring holds
// keys whose material this server lacks (a fresh server, a key another
// leader made, a snapshot restore), it asks the leader, then the other
// peers, and keeps what it gets wrapped in its keystore. Failures retry
// with a growing delay.
func (s *Server) fetchKeyMaterial() {
	const idle = 30 * time.Second
	wait, backoff := idle, 100*time.Millisecond
	for {
		select {
		case <-s.shutdownCh:
			return
		case <-s.keyWant:
		case <-time.After(wait):
		}
		failed := false
		for _, id := range s.missingKeyMaterial() {
			if err := s.fetchKey(id); err != nil {
				s.logger.Debug("keyring: fetching root key material failed; retrying", "key_id", id, "error", err)
				failed = true
			}
		}
		if !failed {
			wait, backoff = idle, 100*time.Millisecond
			continue
		}
		wait = backoff
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
}

// keyPeers is where a key's material may be: the leader first, then every
// other Raft peer.
func (s *Server) keyPeers() []string {
	var out []string
	seen := map[string]bool{s.rpcAddr: true, "": true}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	add(s.LeaderAddr())
	if f := s.raft.GetConfiguration(); f.Error() == nil {
		for _, srv := range f.Configuration().Servers {
			add(string(srv.Address))
		}
	}
	return out
}

// keyFetches are this server's pending fetches, by the ephemeral public
// key the material is to be sealed to.
type keyFetches struct {
	mu      sync.Mutex
	pending map[string]keyFetch
}

type keyFetch struct {
	keyID string
	priv  *ecdh.PrivateKey
}

func (f *keyFetches) add(keyID string, priv *ecdh.PrivateKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending == nil {
		f.pending = map[string]keyFetch{}
	}
	f.pending[string(priv.PublicKey().Bytes())] = keyFetch{keyID, priv}
}

func (f *keyFetches) done(pub []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pending, string(pub))
}

// get returns the ephemeral key of the pending fetch of keyID under pub.
func (f *keyFetches) get(keyID string, pub []byte) *ecdh.PrivateKey {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pending[string(pub)]; ok && p.keyID == keyID {
		return p.priv
	}
	return nil
}

func (s *Server) fetchKey(id string) error {
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	peers := s.keyPeers()
	if len(peers) == 0 {
		return fmt.Errorf("no peer to fetch from")
	}
	pub := priv.PublicKey().Bytes()
	s.keyFetches.add(id, priv)
	defer s.keyFetches.done(pub)
	var last error
	for _, addr := range peers {
		req := &structs.KeyringGetRootKeyRequest{KeyID: id, ReplyAddr: s.rpcAddr, ReplyPublicKey: pub}
		req.Region = s.config.Region
		req.AuthToken = s.serverSecret() // server-only RPC (rpc_authz.go)
		var resp structs.KeyringGetRootKeyResponse
		if last = s.pool.Call(addr, "Keyring.Get", req, &resp); last != nil {
			continue
		}
		// The peer delivered the material (Keyring.Deliver) before answering.
		if s.keystore.has(id) {
			return nil
		}
		last = fmt.Errorf("%s answered but delivered no material", addr)
	}
	return last
}

// keyTransportAEAD derives the AES-256-GCM key that seals one Keyring.Get
// answer from the X25519 shared secret of the two ephemeral keys.
func keyTransportAEAD(shared []byte, keyID string) (cipher.AEAD, error) {
	h := sha256.New()
	h.Write([]byte("drover keyring get\x00"))
	h.Write(shared)
	h.Write([]byte(keyID))
	block, err := aes.NewCipher(h.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func openKeyMaterial(priv *ecdh.PrivateKey, resp *structs.KeyringDeliverRootKeyRequest) (*structs.RootKeyMaterial, error) {
	id := resp.KeyID
	pub, err := ecdh.X25519().NewPublicKey(resp.PublicKey)
	if err != nil {
		return nil, err
	}
	shared, err := priv.ECDH(pub)
	if err != nil {
		return nil, err
	}
	a, err := keyTransportAEAD(shared, id)
	if err != nil {
		return nil, err
	}
	if len(resp.SealedKey) < a.NonceSize() {
		return nil, fmt.Errorf("sealed key too short")
	}
	plain, err := a.Open(nil, resp.SealedKey[:a.NonceSize()], resp.SealedKey[a.NonceSize():], []byte(id))
	if err != nil {
		return nil, err
	}
	m := new(structs.RootKeyMaterial)
	if err := json.Unmarshal(plain, m); err != nil {
		return nil, err
	}
	if len(m.PrivateKey) == 0 || (len(m.EncryptionKey) != 0 && len(m.EncryptionKey) != 32) {
		return nil, fmt.Errorf("malformed key material")
	}
	return m, nil
}

// isRaftPeer reports whether addr is a server in the Raft configuration.
func (s *Server) isRaftPeer(addr string) bool {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, srv := range f.Configuration().Servers {
		if string(srv.Address) == addr {
			return true
		}
	}
	return false
}

// Get answers another server's fetch of a root key's material from this
// server's keystore. The material never goes back to the caller: it is
// delivered, sealed to the asker's ephemeral key, to ReplyAddr, which must
// be a Raft peer; only a server with that fetch pending accepts it. An
// internal RPC between servers: no HTTP route reaches it.
func (k *Keyring) Get(args *structs.KeyringGetRootKeyRequest, reply *structs.KeyringGetRootKeyResponse) error {
	if args.KeyID == "" {
		return structs.NewErrCoded(400, "missing KeyID")
	}
	peer, err := ecdh.X25519().NewPublicKey(args.ReplyPublicKey)
	if err != nil {
		return structs.NewErrCoded(400, "invalid ReplyPublicKey: %v", err)
	}
	if args.ReplyAddr == "" || args.ReplyAddr == k.srv.rpcAddr || !k.srv.isRaftPeer(args.ReplyAddr) {
		return structs.NewErrCoded(403, "ReplyAddr %q is not another server in the Raft configuration", args.ReplyAddr)
	}
	m := k.srv.keystore.get(args.KeyID)
	if m == nil {
		return structs.NewErrCoded(404, "root key %q is not in this server's keystore", args.KeyID)
	}
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	shared, err := priv.ECDH(peer)
	if err != nil {
		return structs.NewErrCoded(400, "invalid ReplyPublicKey: %v", err)
	}
	a, err := keyTransportAEAD(shared, args.KeyID)
	if err != nil {
		return err
	}
	plain, err := json.Marshal(m)
	if err != nil {
		return err
	}
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	del := &structs.KeyringDeliverRootKeyRequest{KeyID: args.KeyID, ReplyPublicKey: args.ReplyPublicKey,
		PublicKey: priv.PublicKey().Bytes(), SealedKey: a.Seal(nonce, nonce, plain, []byte(args.KeyID))}
	del.Region = k.srv.config.Region
	del.AuthToken = k.srv.serverSecret() // server-only RPC (rpc_authz.go)
	var out structs.GenericResponse
	if err := k.srv.pool.Call(args.ReplyAddr, "Keyring.Deliver", del, &out); err != nil {
		return fmt.Errorf("keyring: delivering key %s to %s: %w", args.KeyID, args.ReplyAddr, err)
	}
	return nil
}

// Deliver receives the material of a key this server asked a peer for
// (Keyring.Get); anything it did not ask for is refused.
func (k *Keyring) Deliver(args *structs.KeyringDeliverRootKeyRequest, reply *structs.GenericResponse) error {
	priv := k.srv.keyFetches.get(args.KeyID, args.ReplyPublicKey)
	if priv == nil {
		return structs.NewErrCoded(403, "no fetch of root key %q is pending for ReplyPublicKey", args.KeyID)
	}
	m, err := openKeyMaterial(priv, args)
	if err != nil {
		return structs.NewErrCoded(400, "root key %q: %v", args.KeyID, err)
	}
	return k.srv.keystore.put(args.KeyID, m)
}
