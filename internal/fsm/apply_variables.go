package fsm

import "github.com/drover-project/drover/internal/structs"

// Variable and keyring entries. Variables arrive encrypted: the FSM, the
// log and snapshots only ever hold ciphertext.

// applyVarApply answers the operation's *structs.VarApplyStateResponse (a
// conflict is an answer, not an error).
func (f *FSM) applyVarApply(buf []byte, index uint64) any {
	var req structs.VarApplyStateRequest
	if err := decode(buf, &req, "variable apply"); err != nil {
		return err
	}
	resp, err := f.State().UpdateVariable(index, &req)
	if err != nil {
		return err
	}
	return resp
}

func (f *FSM) applyVarRekey(buf []byte, index uint64) error {
	var req structs.VarRekeyRequest
	if err := decode(buf, &req, "variable rekey"); err != nil {
		return err
	}
	return f.State().UpdateVariableCiphertexts(index, req.Vars)
}

func (f *FSM) applyRootKeyDelete(buf []byte, index uint64) error {
	var req structs.RootKeyDeleteRequest
	if err := decode(buf, &req, "root key delete"); err != nil {
		return err
	}
	if err := f.State().DeleteRootKey(index, req.KeyID); err != nil {
		return err
	}
	if f.keyring != nil {
		f.keyring.RootKeyDeleted(req.KeyID)
	}
	return nil
}
