package structs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CodedError carries the HTTP status a failure maps to. RPC endpoints and the
// client return it for bad input (400), missing objects (404) and the like;
// the HTTP layer writes Code and Message. Anything else is a 500.
type CodedError struct {
	Code    int
	Message string
}

// Error encodes the code so that it survives net/rpc, which sends errors as
// strings; ErrorCode decodes it again.
func (e *CodedError) Error() string { return codedPrefix + strconv.Itoa(e.Code) + "," + e.Message }

const codedPrefix = "RPC Error:: "

// NewErrCoded builds a CodedError.
func NewErrCoded(code int, format string, args ...any) error {
	return &CodedError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the HTTP status an error maps to (500 if uncoded).
// Coded errors that crossed an RPC connection arrive as strings and are
// recognised too.
func ErrorCode(err error) (int, string) {
	var ce *CodedError
	if errors.As(err, &ce) {
		return ce.Code, ce.Message
	}
	msg := err.Error()
	if i := strings.Index(msg, codedPrefix); i >= 0 {
		rest := msg[i+len(codedPrefix):]
		if j := strings.IndexByte(rest, ','); j > 0 {
			if code, cerr := strconv.Atoi(rest[:j]); cerr == nil && code >= 400 && code < 600 {
				return code, rest[j+1:]
			}
		}
	}
	return 500, msg
}

// Common errors.
var (
	ErrNoLeader = errors.New("No cluster leader")
	// ErrLeadershipLost is a write whose leader lost its leadership after
	// appending the entry: a later leader may still commit it, so the
	// write may or may not have been applied. Unlike ErrNoLeader it must
	// not be retried blindly (a job would be registered twice).
	ErrLeadershipLost = errors.New("leadership lost while committing log: the write may or may not have been applied; read the current state before retrying")
	// ErrRestoredWhileCommitting is a write overtaken by a snapshot restore
	// after it was appended: its outcome is unknown too.
	ErrRestoredWhileCommitting = errors.New("snapshot restored while committing log: the write may or may not have been applied; read the current state before retrying")
	ErrPermissionDenied        = errors.New("Permission denied")
	ErrUnknownAllocation       = NewErrCoded(404, "Unknown allocation")
	ErrUnknownNode             = NewErrCoded(404, "Unknown node")
	ErrUnknownJob              = NewErrCoded(404, "job not found")
	ErrUnknownEvaluation       = NewErrCoded(404, "eval not found")
	ErrUnknownDeployment       = NewErrCoded(404, "deployment not found")
)

// IsNoLeader reports whether err (local, or a string that crossed an RPC
// connection) is ErrNoLeader: no leader took the call, so the write never
// reached the log and is safe to send again.
func IsNoLeader(err error) bool {
	return err != nil && (errors.Is(err, ErrNoLeader) || strings.Contains(err.Error(), ErrNoLeader.Error()))
}

// IsOutcomeUnknown reports whether err says a write was handed to Raft but
// its outcome is not known (leadership lost or a restore after the append,
// a forwarded call that timed out): retrying it may apply it twice.
func IsOutcomeUnknown(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return errors.Is(err, ErrLeadershipLost) || errors.Is(err, ErrRestoredWhileCommitting) ||
		strings.Contains(msg, outcomeUnknownText)
}

// outcomeUnknownText is in the message of every error IsOutcomeUnknown
// recognises, so it is recognised after crossing an RPC connection.
const outcomeUnknownText = "may or may not have been applied"

// NewErrOutcomeUnknown wraps err (a call sent whose answer never came)
// with what it means for a write.
func NewErrOutcomeUnknown(format string, args ...any) error {
	return fmt.Errorf("%s: the write %s; read the current state before retrying", fmt.Sprintf(format, args...), outcomeUnknownText)
}
