package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// grepDir reports the files under dir whose bytes contain needle.
func grepDir(t *testing.T, dir string, needle []byte) (hits []string, files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, needle) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits, files
}

// Variables end to end on a non-dev server with the official client:
// a CAS conflict answers the current value; a lock held by one client
// blocks another until it is released or its TTL runs out; the plaintext
// never reaches the Raft log or the snapshots under the data dir; after a
// full rotation every variable still decrypts and the old key can be
// removed.
func TestVariablesEndToEnd(t *testing.T) {
	dataDir := t.TempDir()
	a := startAgent(t, dataDir, []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1, "raft_snapshot_threshold": 1, "raft_snapshot_interval": "1s"},
	})
	a.waitReady(false)
	vars := a.client.Variables()

	secret := fmt.Sprintf("PLAINTEXT-%d-SECRET", time.Now().UnixNano())
	created, _, err := vars.Create(&api.Variable{Path: "app/db", Items: api.VariableItems{"password": secret}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, _, err := vars.Create(&api.Variable{Path: fmt.Sprintf("app/more/%d", i), Items: api.VariableItems{"k": secret + fmt.Sprint(i)}}, nil); err != nil {
			t.Fatal(err)
		}
	}

	// CAS: an update from an old index is refused with the current value.
	oob := created.Copy()
	oob.Items["password"] = secret + "-v2"
	now, _, err := vars.Update(oob, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = vars.CheckedUpdate(created, nil)
	var conflict api.ErrCASConflict
	if !errors.As(err, &conflict) {
		t.Fatalf("stale CAS update: want a conflict, got %v", err)
	}
	if conflict.Conflict.ModifyIndex != now.ModifyIndex || conflict.Conflict.Items["password"] != secret+"-v2" {
		t.Fatalf("conflict carries %+v, want the current value %+v", conflict.Conflict, now)
	}
	if _, err := vars.CheckedDelete("app/db", created.ModifyIndex, nil); !errors.As(err, &conflict) {
		t.Fatalf("stale CAS delete: want a conflict, got %v", err)
	}
	if _, _, err := vars.CheckedCreate(&api.Variable{Path: "app/db", Items: api.VariableItems{"x": "y"}}, nil); !errors.As(err, &conflict) {
		t.Fatalf("cas=0 create of an existing variable: want a conflict, got %v", err)
	}

	// Bad input is a 400 naming what is wrong.
	for _, bad := range []struct {
		v    *api.Variable
		want string
	}{
		{&api.Variable{Path: "app/empty"}, "variable missing required Items object"},
		{&api.Variable{Path: "bad path!", Items: api.VariableItems{"k": "v"}}, "invalid path"},
		{&api.Variable{Path: "nomad/other", Items: api.VariableItems{"k": "v"}}, "nomad/jobs"},
		{&api.Variable{Path: "app/big", Items: api.VariableItems{"k": strings.Repeat("x", 70000)}}, "limited to 65536 bytes"},
	} {
		if _, _, err := vars.Create(bad.v, nil); err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("create %q: want a 400 with %q, got %v", bad.v.Path, bad.want, err)
		}
	}
	if _, _, err := vars.AcquireLock(&api.Variable{Path: "app/db", Lock: &api.VariableLock{TTL: "1s"}}, nil); err == nil || !strings.Contains(err.Error(), "lock TTL must be between") {
		t.Fatalf("lock with a 1s TTL: %v", err)
	}
	if _, _, err := vars.AcquireLock(&api.Variable{Path: "app/db", Lock: &api.VariableLock{TTL: "soon"}}, nil); err == nil || !strings.Contains(err.Error(), "invalid Lock.TTL") {
		t.Fatalf("lock with a bad TTL: %v", err)
	}

	// Locks: two clients contend for app/lock.
	cfg2 := api.DefaultConfig()
	cfg2.Address = a.url("")
	other, err := api.NewClient(cfg2)
	if err != nil {
		t.Fatal(err)
	}
	lockVar := func() *api.Variable {
		return &api.Variable{Path: "app/lock", Items: api.VariableItems{"holder": "x"},
			Lock: &api.VariableLock{TTL: "10s", LockDelay: "1s"}}
	}
	held, _, err := vars.AcquireLock(lockVar(), nil)
	if err != nil || held.Lock == nil || held.Lock.ID == "" {
		t.Fatalf("first acquire: %v %+v", err, held)
	}
	if _, _, err := other.Variables().AcquireLock(lockVar(), nil); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("second client acquired a held lock: %v", err)
	}
	if _, _, err := other.Variables().Update(&api.Variable{Path: "app/lock", Items: api.VariableItems{"holder": "intruder"}}, nil); err == nil {
		t.Fatalf("a write without the lock ID changed a locked variable")
	}
	if _, _, err := vars.RenewLock(held, nil); err != nil {
		t.Fatalf("renew by the holder: %v", err)
	}
	if _, _, err := vars.ReleaseLock(held, nil); err != nil {
		t.Fatalf("release: %v", err)
	}
	// Timed from before the second holder's acquire: its TTL starts when
	// the server takes that call, so the lock cannot come free less than
	// the TTL after this (timed after the call, a stall between the two
	// would shorten what the test sees).
	start := time.Now()
	held2, _, err := other.Variables().AcquireLock(lockVar(), nil)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	// The second holder never renews: its lock expires after its TTL (and
	// the 1s lock delay), then the first client gets it.
	if _, _, err := vars.AcquireLock(lockVar(), nil); err == nil {
		t.Fatal("acquired a lock another client holds")
	}
	waitFor(t, 40*time.Second, "the unrenewed lock to expire", func() bool {
		_, _, err := vars.AcquireLock(lockVar(), nil)
		return err == nil
	})
	if waited := time.Since(start); waited < 9*time.Second {
		t.Fatalf("lock with a 10s TTL was free after %v", waited)
	}
	if _, _, err := other.Variables().RenewLock(held2, nil); err == nil {
		t.Fatal("the expired holder renewed a lock it lost")
	}

	// Plaintext never reaches disk: wait for a snapshot that holds the
	// variables (their paths are not secret, so they are there).
	raftDir := filepath.Join(dataDir, "server")
	waitFor(t, 30*time.Second, "a Raft snapshot holding the variables", func() bool {
		hits, _ := grepDir(t, filepath.Join(raftDir, "raft", "snapshots"), []byte("app/more/4"))
		return len(hits) > 0
	})
	if hits, _ := grepDir(t, raftDir, []byte("app/db")); len(hits) == 0 {
		t.Fatal("the grep finds nothing, not even the variable's path: it is looking in the wrong place")
	}
	if hits, files := grepDir(t, dataDir, []byte(secret)); len(hits) > 0 || files == 0 {
		t.Fatalf("plaintext of a variable found on disk in %v (%d files searched)", hits, files)
	}

	// Full rotation: every variable is re-encrypted; the old key is then
	// inactive and can be removed; everything still reads.
	keys, _, err := a.client.Keyring().List(nil)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys: %v %v", keys, err)
	}
	old := keys[0].KeyID
	if _, err := a.client.Keyring().Delete(&api.KeyringDeleteOptions{KeyID: old}, nil); err == nil {
		t.Fatal("the active key was deleted")
	}
	newKey, _, err := a.client.Keyring().Rotate(&api.KeyringRotateOptions{Full: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the rekey to finish", func() bool {
		keys, _, err := a.client.Keyring().List(nil)
		if err != nil {
			return false
		}
		for _, k := range keys {
			if k.KeyID == old {
				return k.State == api.RootKeyStateInactive
			}
		}
		return false
	})
	if _, err := a.client.Keyring().Delete(&api.KeyringDeleteOptions{KeyID: old}, nil); err != nil {
		t.Fatalf("delete the old key after rekey: %v", err)
	}
	keys, _, _ = a.client.Keyring().List(nil)
	if len(keys) != 1 || keys[0].KeyID != newKey.KeyID || keys[0].State != api.RootKeyStateActive {
		t.Fatalf("keys after delete: %+v", keys)
	}
	got, _, err := vars.Read("app/db", nil)
	if err != nil || got.Items["password"] != secret+"-v2" {
		t.Fatalf("read after rotate: %v %+v", err, got)
	}
	for i := 0; i < 5; i++ {
		got, _, err := vars.Read(fmt.Sprintf("app/more/%d", i), nil)
		if err != nil || got.Items["k"] != secret+fmt.Sprint(i) {
			t.Fatalf("read app/more/%d after rotate: %v %+v", i, err, got)
		}
	}
}
