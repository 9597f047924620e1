package server

import (
	"bytes"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/testport"
)

// durableServer starts a non-dev server (Raft log, snapshots and keystore
// on disk under dir) listening on addr ("" for a free port). The free port
// is testport's, outside the ephemeral range: a test restarts the server on
// it, and a port from :0 could be taken meanwhile as the source port of any
// outgoing connection on the machine.
func durableServer(t *testing.T, dir, id, addr string) *Server {
	t.Helper()
	if addr == "" {
		p, err := testport.Take()
		if err != nil {
			t.Fatal(err)
		}
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	var ln net.Listener
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for ln, err = net.Listen("tcp", addr); err != nil && time.Now().Before(deadline); ln, err = net.Listen("tcp", addr) {
		time.Sleep(20 * time.Millisecond) // the previous server's port is being released
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID = id
	cfg.DataDir = dir
	cfg.RPCListener = ln
	cfg.NumSchedulers = 1
	s, err := NewServer(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	waitFor(t, 10*time.Second, "leadership", func() bool { return s.IsLeader() })
	return s
}

func waitActiveKey(t *testing.T, s *Server) *structs.RootKey {
	t.Helper()
	var key *structs.RootKey
	waitFor(t, 10*time.Second, "an active root key with its material", func() bool {
		k, err := activeRootKey(s.State(), s.keystore)
		key = k
		return err == nil
	})
	return key
}

func putVar(t *testing.T, s *Server, path string, items map[string]string) {
	t.Helper()
	var resp structs.VariablesApplyResponse
	req := &structs.VariablesApplyRequest{Op: structs.VarOpSet, Var: &structs.VariableDecrypted{
		VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: path}, Items: items}}
	if err := s.RPC("Variables.Apply", req, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Result != structs.VarOpResultOk {
		t.Fatalf("variable write: %s %s", resp.Result, resp.Error)
	}
}

// assertNoMaterial fails when any file under dir outside keystore/ holds
// the key's material (raw or base64), or when a keystore file holds it
// unwrapped.
func assertNoMaterial(t *testing.T, dir string, key *structs.RootKey) {
	t.Helper()
	secrets := [][]byte{key.PrivateKey, key.EncryptionKey,
		[]byte(base64.StdEncoding.EncodeToString(key.PrivateKey)), []byte(base64.StdEncoding.EncodeToString(key.EncryptionKey))}
	sawWrapped := false
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, sec := range secrets {
			if bytes.Contains(raw, sec) {
				t.Errorf("%s holds root key %s's material unwrapped", path, key.KeyID)
			}
		}
		if filepath.Base(filepath.Dir(path)) == "keystore" && strings.HasSuffix(path, key.KeyID+keystoreSuffix) {
			sawWrapped = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawWrapped {
		t.Errorf("no wrapped keystore file for key %s under %s", key.KeyID, dir)
	}
}

// TestKeystoreMaterialNeverInRaft: a non-dev server's Raft log, snapshots
// and state hold only root key metadata; the material sits wrapped in
// the keystore, and a restart keeps the key and its variables readable.
func TestKeystoreMaterialNeverInRaft(t *testing.T) {
	dir, id := t.TempDir(), uuid.NewString()
	s := durableServer(t, dir, id, "")
	key := waitActiveKey(t, s)
	if len(key.PrivateKey) == 0 || len(key.EncryptionKey) != 32 {
		t.Fatalf("active key %s has no material", key.KeyID)
	}
	stored, _ := s.State().RootKeys(nil)
	for _, k := range stored {
		if len(k.PrivateKey) > 0 || len(k.EncryptionKey) > 0 {
			t.Fatalf("state store holds root key %s's material", k.KeyID)
		}
	}
	putVar(t, s, "app/db", map[string]string{"password": "hunter2"})
	if err := s.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	addr := s.rpcAddr
	s.Shutdown()
	assertNoMaterial(t, dir, key)
	if fi, err := os.Stat(filepath.Join(dir, "keystore", keystoreKEKFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key-encryption key file: %v %v", fi, err)
	}

	s2 := durableServer(t, dir, id, addr)
	again := waitActiveKey(t, s2)
	if again.KeyID != key.KeyID || !bytes.Equal(again.EncryptionKey, key.EncryptionKey) {
		t.Fatalf("after restart the active key is %s, want %s with the same material", again.KeyID, key.KeyID)
	}
	var read structs.VariablesReadResponse
	if err := s2.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "app/db",
		QueryOptions: structs.QueryOptions{Namespace: "default"}}, &read); err != nil {
		t.Fatal(err)
	}
	if read.Data == nil || read.Data.Items["password"] != "hunter2" {
		t.Fatalf("variable after restart: %+v", read.Data)
	}
}

// TestKeystoreFollowerFetchesKey: followers get the leader's key material
// over Keyring.Get and decrypt a variable written on the leader; their
// state holds no material.
func TestKeystoreFollowerFetchesKey(t *testing.T) {
	servers := testCluster(t, 3)
	leader := waitLeader(t, servers, 10*time.Second, "a leader")
	key := waitActiveKey(t, leader)
	putVar(t, leader, "shared/secret", map[string]string{"token": "s3cr3t"})
	ev, err := leader.State().VariableByPath(nil, "default", "shared/secret")
	if err != nil || ev == nil {
		t.Fatalf("variable on leader: %v %v", ev, err)
	}
	for _, f := range servers {
		if f == leader {
			continue
		}
		var items map[string]string
		waitFor(t, 10*time.Second, "a follower to decrypt the leader's variable", func() bool {
			items, err = f.encrypter.decrypt(f.State(), ev)
			return err == nil
		})
		if items["token"] != "s3cr3t" {
			t.Fatalf("follower decrypted %v", items)
		}
		m := f.keystore.get(key.KeyID)
		if m == nil || !bytes.Equal(m.EncryptionKey, key.EncryptionKey) {
			t.Fatalf("follower keystore lacks key %s", key.KeyID)
		}
		keys, _ := f.State().RootKeys(nil)
		for _, k := range keys {
			if len(k.PrivateKey) > 0 || len(k.EncryptionKey) > 0 {
				t.Fatalf("follower state holds root key %s's material", k.KeyID)
			}
		}
	}
}

// TestKeystoreMigratesOldShapeEntry: an entry from before the keystore
// (material inline) is still applied: the material moves to every
// server's keystore and the state keeps the metadata only.
func TestKeystoreMigratesOldShapeEntry(t *testing.T) {
	servers := testCluster(t, 3)
	leader := waitLeader(t, servers, 10*time.Second, "a leader")
	waitActiveKey(t, leader)
	old := &structs.RootKey{KeyID: uuid.NewString(), Algorithm: "EdDSA", State: structs.RootKeyStateInactive,
		PrivateKey: []byte("old-private-der"), EncryptionKey: bytes.Repeat([]byte{7}, 32)}
	if _, _, err := leader.raftApply(structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{Key: old}); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		waitFor(t, 10*time.Second, "the old key in the keystore", func() bool { return s.keystore.has(old.KeyID) })
		if m := s.keystore.get(old.KeyID); !bytes.Equal(m.PrivateKey, old.PrivateKey) {
			t.Fatalf("migrated material differs")
		}
		keys, _ := s.State().RootKeys(nil)
		for _, k := range keys {
			if len(k.PrivateKey) > 0 || len(k.EncryptionKey) > 0 {
				t.Fatalf("state holds root key %s's material", k.KeyID)
			}
		}
	}
}

// TestKeyringGetBadInput: Keyring.Get names the bad field with a 4xx, and
// neither it nor Keyring.Deliver hands material to a caller that is not a
// server with that fetch pending.
func TestKeyringGetBadInput(t *testing.T) {
	s := testServer(t, nil)
	key := waitActiveKey(t, s)
	k := &Keyring{s}
	pub := make([]byte, 32)
	pub[0] = 9
	for _, c := range []struct {
		req  structs.KeyringGetRootKeyRequest
		want string
	}{
		{structs.KeyringGetRootKeyRequest{}, "KeyID"},
		{structs.KeyringGetRootKeyRequest{KeyID: key.KeyID, ReplyPublicKey: []byte{1}}, "ReplyPublicKey"},
		{structs.KeyringGetRootKeyRequest{KeyID: key.KeyID, ReplyPublicKey: pub, ReplyAddr: "127.0.0.1:1"}, "ReplyAddr"},
		{structs.KeyringGetRootKeyRequest{KeyID: key.KeyID, ReplyPublicKey: pub, ReplyAddr: s.rpcAddr}, "ReplyAddr"},
	} {
		var resp structs.KeyringGetRootKeyResponse
		err := k.Get(&c.req, &resp)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Keyring.Get(%+v): %v, want an error naming %s", c.req, err, c.want)
		}
	}
	var out structs.GenericResponse
	err := k.Deliver(&structs.KeyringDeliverRootKeyRequest{KeyID: "forged", ReplyPublicKey: pub}, &out)
	if err == nil || !strings.Contains(err.Error(), "no fetch") || s.keystore.has("forged") {
		t.Errorf("unsolicited Keyring.Deliver: %v", err)
	}
}
