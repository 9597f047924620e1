package state

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func varIn(path string, modify uint64, data string, lock *structs.VariableLock) *structs.VariableEncrypted {
	return &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{
		Namespace: "default", Path: path, ModifyIndex: modify, ModifyTime: 1, Lock: lock,
	}, Data: []byte(data), KeyID: "k1"}
}

func apply(t *testing.T, s *StateStore, index uint64, op string, v *structs.VariableEncrypted) *structs.VarApplyStateResponse {
	t.Helper()
	resp, err := s.UpdateVariable(index, &structs.VarApplyStateRequest{Op: op, Var: v})
	if err != nil {
		t.Fatalf("%s at %d: %v", op, index, err)
	}
	return resp
}

// Conflicts are decided by the store, the same on every server: a CAS index
// that is not the current one, and a variable locked by another holder.
func TestVarApplyConflicts(t *testing.T) {
	s := testStore(t)
	if r := apply(t, s, 10, structs.VarOpCAS, varIn("a", 0, "v1", nil)); r.Result != structs.VarOpResultOk || r.Written.CreateIndex != 10 {
		t.Fatalf("cas=0 create: %+v", r)
	}
	r := apply(t, s, 11, structs.VarOpCAS, varIn("a", 0, "v2", nil))
	if r.Result != structs.VarOpResultConflict || string(r.Conflict.Data) != "v1" || r.Conflict.ModifyIndex != 10 {
		t.Fatalf("cas=0 over an existing variable: %+v", r)
	}
	if r := apply(t, s, 12, structs.VarOpCAS, varIn("a", 10, "v2", nil)); r.Result != structs.VarOpResultOk || r.Written.CreateIndex != 10 || r.Written.ModifyIndex != 12 {
		t.Fatalf("cas at the current index: %+v", r)
	}
	if r := apply(t, s, 13, structs.VarOpDeleteCAS, varIn("a", 10, "", nil)); r.Result != structs.VarOpResultConflict {
		t.Fatalf("delete-cas at a stale index: %+v", r)
	}

	lock := &structs.VariableLock{ID: "L1", TTL: structs.DefaultVariableLockTTL}
	if r := apply(t, s, 14, structs.VarOpLockAcquire, varIn("a", 0, "", lock)); r.Result != structs.VarOpResultOk || string(r.Written.Data) != "v2" {
		t.Fatalf("acquire keeps the items: %+v", r)
	}
	if r := apply(t, s, 15, structs.VarOpLockAcquire, varIn("a", 0, "", &structs.VariableLock{ID: "L2"})); r.Result != structs.VarOpResultConflict {
		t.Fatalf("second acquire: %+v", r)
	}
	if r := apply(t, s, 16, structs.VarOpSet, varIn("a", 0, "intruder", nil)); r.Result != structs.VarOpResultConflict {
		t.Fatalf("write without the lock: %+v", r)
	}
	if r := apply(t, s, 17, structs.VarOpDelete, varIn("a", 0, "", nil)); r.Result != structs.VarOpResultConflict {
		t.Fatalf("delete without the lock: %+v", r)
	}
	if r := apply(t, s, 18, structs.VarOpSet, varIn("a", 0, "holder", &structs.VariableLock{ID: "L1"})); r.Result != structs.VarOpResultOk || r.Written.Lock == nil {
		t.Fatalf("holder's write: %+v", r)
	}
	if r := apply(t, s, 19, structs.VarOpLockRelease, varIn("a", 0, "", &structs.VariableLock{ID: "L2"})); r.Result != structs.VarOpResultConflict {
		t.Fatalf("release by a non-holder: %+v", r)
	}
	if r := apply(t, s, 20, structs.VarOpLockRelease, varIn("a", 0, "", &structs.VariableLock{ID: "L1"})); r.Result != structs.VarOpResultOk || r.Written.Lock != nil || string(r.Written.Data) != "holder" {
		t.Fatalf("release: %+v", r)
	}
	if r := apply(t, s, 21, structs.VarOpDelete, varIn("a", 0, "", nil)); r.Result != structs.VarOpResultOk {
		t.Fatalf("delete: %+v", r)
	}
	if v, err := s.VariableByPath(nil, "default", "a"); err != nil || v != nil {
		t.Fatalf("after delete: %+v %v", v, err)
	}
}

// A rekey replaces ciphertext only of variables unchanged since it read
// them, and leaves their indexes alone (a CAS client is not disturbed).
func TestRekeyVariablesSkipsChanged(t *testing.T) {
	s := testStore(t)
	apply(t, s, 10, structs.VarOpSet, varIn("a", 0, "old-a", nil))
	apply(t, s, 11, structs.VarOpSet, varIn("b", 0, "old-b", nil))
	apply(t, s, 12, structs.VarOpSet, varIn("b", 0, "newer-b", nil)) // b changed after the rekey read it
	ra := varIn("a", 10, "rekeyed-a", nil)
	rb := varIn("b", 11, "rekeyed-b", nil)
	ra.KeyID, rb.KeyID = "k2", "k2"
	must(t, s.UpdateVariableCiphertexts(13, []*structs.VariableEncrypted{ra, rb}))
	a, _ := s.VariableByPath(nil, "default", "a")
	b, _ := s.VariableByPath(nil, "default", "b")
	if string(a.Data) != "rekeyed-a" || a.KeyID != "k2" || a.ModifyIndex != 10 {
		t.Fatalf("a: %+v", a)
	}
	if string(b.Data) != "newer-b" || b.KeyID != "k1" {
		t.Fatalf("b was overwritten by a stale rekey: %+v", b)
	}
}

// A namespace holding variables cannot be deleted (as Nomad): its
// variables would be left in a namespace that no longer exists.
func TestNamespaceWithVariablesNotDeletable(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNamespaces(5, []*structs.Namespace{{Name: "prod"}}))
	v := varIn("app/config", 0, "sealed", nil)
	v.Namespace = "prod"
	apply(t, s, 6, structs.VarOpSet, v)
	err := s.DeleteNamespaces(7, []string{"prod"})
	if code, msg := structs.ErrorCode(err); code != 400 || !strings.Contains(msg, "variable") {
		t.Fatalf("delete of a namespace with a variable: %v, want a 400 naming its variables", err)
	}
	apply(t, s, 8, structs.VarOpDelete, v)
	if err := s.DeleteNamespaces(9, []string{"prod"}); err != nil {
		t.Fatalf("delete once the variable is gone: %v", err)
	}
}
