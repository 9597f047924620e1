package structs

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Variable and keyring Raft entries (70, 71, 73–79 are theirs).
const (
	VarApplyStateRequestType MessageType = 70
	RootKeyDeleteRequestType MessageType = 71
	VarRekeyRequestType      MessageType = 73
)

// Variable operations carried by VarApplyStateRequest.
const (
	VarOpSet         = "set"
	VarOpCAS         = "cas"
	VarOpDelete      = "delete"
	VarOpDeleteCAS   = "delete-cas"
	VarOpLockAcquire = "lock-acquire"
	VarOpLockRelease = "lock-release"
)

// Results of a variable operation, as Nomad reports them.
const (
	VarOpResultOk       = "ok"
	VarOpResultConflict = "conflict"
	VarOpResultRedacted = "redacted"
	VarOpResultError    = "error"
)

// Limits of variables, as Nomad's.
const (
	// MaxVariableSize bounds the encrypted items of one variable (64 KiB).
	MaxVariableSize = 65536
	// VariableLockTTL bounds and defaults.
	DefaultVariableLockTTL   = 15 * time.Second
	MinVariableLockTTL       = 10 * time.Second
	MaxVariableLockTTL       = 24 * time.Hour
	DefaultVariableLockDelay = 15 * time.Second
	maxVariablePathLength    = 128
)

// validVariablePath is Nomad's path alphabet: letters, digits and -_~/.
var validVariablePath = regexp.MustCompile(`^[a-zA-Z0-9-_~/]{1,128}$`)

// VariableLock is a lock held on a variable. The ID is chosen by the server
// when the lock is acquired; the holder proves itself with it.
type VariableLock struct {
	ID        string
	TTL       time.Duration
	LockDelay time.Duration
}

// VariableMetadata is what lists show of a variable: never its items.
type VariableMetadata struct {
	Namespace   string
	Path        string
	Lock        *VariableLock
	CreateIndex uint64
	CreateTime  int64
	ModifyIndex uint64
	ModifyTime  int64
}

// VariableEncrypted is a variable as state, Raft and snapshots hold it: the
// items are AES-GCM ciphertext under root key KeyID, never plaintext.
type VariableEncrypted struct {
	VariableMetadata
	Data  []byte
	KeyID string
}

// VariableDecrypted is a variable as the RPC and HTTP layers serve it.
type VariableDecrypted struct {
	VariableMetadata
	Items map[string]string
}

// Copy returns a deep copy.
func (v *VariableEncrypted) Copy() *VariableEncrypted {
	if v == nil {
		return nil
	}
	out := *v
	if v.Lock != nil {
		l := *v.Lock
		out.Lock = &l
	}
	out.Data = append([]byte(nil), v.Data...)
	return &out
}

// Metadata returns a copy of v's metadata.
func (v *VariableEncrypted) Metadata() *VariableMetadata {
	m := v.VariableMetadata
	if m.Lock != nil {
		l := *m.Lock
		m.Lock = &l
	}
	return &m
}

// ValidateVariablePath checks a variable path as Nomad does: a bad path is
// a 400 naming it.
func ValidateVariablePath(path string) error {
	switch {
	case path == "":
		return NewErrCoded(400, "variable requires path")
	case len(path) > maxVariablePathLength:
		return NewErrCoded(400, "variable path is longer than %d characters", maxVariablePathLength)
	case !validVariablePath.MatchString(path):
		return NewErrCoded(400, "invalid path %q", path)
	case strings.Contains(path, "//"), strings.HasPrefix(path, "/"), strings.HasSuffix(path, "/"):
		return NewErrCoded(400, "invalid path %q", path)
	}
	parts := strings.Split(path, "/")
	if parts[0] != "nomad" {
		return nil
	}
	// nomad/ is reserved except for the job and template trees.
	if len(parts) == 1 {
		return NewErrCoded(400, "\"nomad\" is a reserved top-level directory path, but you may write variables to \"nomad/jobs\", \"nomad/job-templates\", or below")
	}
	switch parts[1] {
	case "jobs", "job-templates", "sentinel":
		return nil
	}
	return NewErrCoded(400, "only paths at \"nomad/jobs\" or \"nomad/job-templates\" and below are valid paths under the top-level \"nomad\" directory")
}

// ValidateVariableItems checks what a write carries.
func ValidateVariableItems(items map[string]string) error {
	if len(items) == 0 {
		return NewErrCoded(400, "variable missing required Items object")
	}
	for k := range items {
		if k == "" {
			return NewErrCoded(400, "variable item keys cannot be empty")
		}
	}
	return nil
}

// ValidateVariableLock fills a lock's defaults and checks its bounds.
func ValidateVariableLock(l *VariableLock) error {
	if l.TTL == 0 {
		l.TTL = DefaultVariableLockTTL
	}
	if l.LockDelay == 0 {
		l.LockDelay = DefaultVariableLockDelay
	}
	if l.TTL < MinVariableLockTTL || l.TTL > MaxVariableLockTTL {
		return NewErrCoded(400, "lock TTL must be between %s and %s, got %s", MinVariableLockTTL, MaxVariableLockTTL, l.TTL)
	}
	if l.LockDelay < 0 || l.LockDelay > MaxVariableLockTTL {
		return NewErrCoded(400, "lock delay must be between 0 and %s, got %s", MaxVariableLockTTL, l.LockDelay)
	}
	return nil
}

// VarApplyStateRequest is the one Raft entry of every variable write. The
// server encrypts the items and chooses times and lock IDs before the entry.
type VarApplyStateRequest struct {
	Op  string
	Var *VariableEncrypted
	WriteRequest
}

// VarApplyStateResponse is what the FSM answers for a variable write.
// Conflict is the current variable when the operation found another one
// (CAS index, lock held by another).
type VarApplyStateResponse struct {
	Op       string
	Result   string
	Conflict *VariableEncrypted
	Written  *VariableEncrypted
	Index    uint64
}

// VarRekeyRequest replaces the ciphertext of variables re-encrypted under
// the active key (those that changed since are skipped).
type VarRekeyRequest struct {
	Vars []*VariableEncrypted
	WriteRequest
}

// RootKeyDeleteRequest removes a root key.
type RootKeyDeleteRequest struct {
	KeyID string
	WriteRequest
}

// VariablesApplyRequest is the Variables.Apply RPC.
type VariablesApplyRequest struct {
	Op  string
	Var *VariableDecrypted
	WriteRequest
}

// VariablesApplyResponse answers Variables.Apply.
type VariablesApplyResponse struct {
	Op       string
	Input    *VariableDecrypted
	Result   string
	Error    string
	Conflict *VariableDecrypted
	Output   *VariableDecrypted
	WriteMeta
}

// VariablesReadRequest names one variable.
type VariablesReadRequest struct {
	Path string
	QueryOptions
}

// VariablesReadResponse answers Variables.Read; Data is nil when there is none.
type VariablesReadResponse struct {
	Data *VariableDecrypted
	QueryMeta
}

// VariablesListRequest lists variables (Prefix, Namespace "*" for all).
type VariablesListRequest struct {
	QueryOptions
}

// VariablesListResponse lists variable metadata.
type VariablesListResponse struct {
	Data []*VariableMetadata
	QueryMeta
}

// VariablesRenewLockRequest renews the lock a holder proves with Lock.ID.
type VariablesRenewLockRequest struct {
	Path   string
	LockID string
	WriteRequest
}

// VariablesRenewLockResponse answers Variables.RenewLock.
type VariablesRenewLockResponse struct {
	VarMeta *VariableMetadata
	WriteMeta
}

// String names a variable in errors.
func (m *VariableMetadata) String() string { return fmt.Sprintf("%s@%s", m.Path, m.Namespace) }

// RootKeyMeta is a root key as the keyring API lists it: never key material.
type RootKeyMeta struct {
	KeyID       string
	Algorithm   string
	CreateTime  int64
	CreateIndex uint64
	ModifyIndex uint64
	State       string
	PublishTime int64
}

// KeyringListRootKeyMetaResponse answers Keyring.List.
type KeyringListRootKeyMetaResponse struct {
	Keys []*RootKeyMeta
	QueryMeta
}

// KeyringRotateRootKeyRequest rotates the keyring; Full re-encrypts every
// variable under the new key.
type KeyringRotateRootKeyRequest struct {
	Full bool
	WriteRequest
}

// KeyringRotateRootKeyResponse answers Keyring.Rotate.
type KeyringRotateRootKeyResponse struct {
	Key *RootKeyMeta
	WriteMeta
}

// KeyringDeleteRootKeyRequest removes an inactive root key.
type KeyringDeleteRootKeyRequest struct {
	KeyID string
	Force bool
	WriteRequest
}
