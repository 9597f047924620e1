package server

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// lockAcquire asks for the lock of path as the official client's Locks and
// LockLeaser do: the variable's path and lock parameters, no items.
func lockAcquire(t *testing.T, s *Server, path string, items map[string]string) *structs.VariablesApplyResponse {
	t.Helper()
	var resp structs.VariablesApplyResponse
	req := &structs.VariablesApplyRequest{Op: structs.VarOpLockAcquire, Var: &structs.VariableDecrypted{
		VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: path,
			Lock: &structs.VariableLock{TTL: time.Minute, LockDelay: time.Second}},
		Items: items}}
	if err := s.RPC("Variables.Apply", req, &resp); err != nil {
		t.Fatalf("lock-acquire %s: %v", path, err)
	}
	return &resp
}

func readVar(t *testing.T, s *Server, path string) *structs.VariableDecrypted {
	t.Helper()
	var read structs.VariablesReadResponse
	if err := s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: path,
		QueryOptions: structs.QueryOptions{Namespace: "default"}}, &read); err != nil {
		t.Fatal(err)
	}
	return read.Data
}

// A lock on a path where no variable exists yet is taken without items, as
// Nomad takes it (the official client's Locks: "the variable doesn't need
// to exist"): it was refused with "does not exist and the lock request
// carries no items", so a LockLeaser could never lock a fresh path. A
// second holder is refused while the first holds it; a lock taken without
// items on an existing variable keeps its items.
func TestVariableLockAcquireWithoutItemsCreatesTheVariable(t *testing.T) {
	s := testServer(t, nil)
	waitFor(t, 10*time.Second, "an active root key", func() bool {
		_, err := activeRootKey(s.State(), s.keystore)
		return err == nil
	})

	first := lockAcquire(t, s, "locks/leader", nil)
	if first.Result != structs.VarOpResultOk || first.Output == nil || first.Output.Lock == nil || first.Output.Lock.ID == "" {
		t.Fatalf("first acquire: result %q output %+v", first.Result, first.Output)
	}
	got := readVar(t, s, "locks/leader")
	if got == nil || got.Lock == nil || got.Lock.ID != first.Output.Lock.ID || len(got.Items) != 0 {
		t.Fatalf("the locked variable: %+v", got)
	}
	if got.ModifyTime < got.CreateTime {
		t.Fatalf("the locked variable was modified (%d) before it was created (%d)", got.ModifyTime, got.CreateTime)
	}
	if second := lockAcquire(t, s, "locks/leader", nil); second.Result != structs.VarOpResultConflict {
		t.Fatalf("second acquire while held: result %q", second.Result)
	}

	putVar(t, s, "locks/config", map[string]string{"owner": "ops"})
	if r := lockAcquire(t, s, "locks/config", nil); r.Result != structs.VarOpResultOk {
		t.Fatalf("acquire on an existing variable: result %q", r.Result)
	}
	if got := readVar(t, s, "locks/config"); got == nil || got.Items["owner"] != "ops" || got.Lock == nil {
		t.Fatalf("an existing variable locked without items lost them: %+v", got)
	}
}
