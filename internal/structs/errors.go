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
	ErrNoLeader          = errors.New("No cluster leader")
	ErrPermissionDenied  = errors.New("Permission denied")
	ErrUnknownAllocation = NewErrCoded(404, "Unknown allocation")
	ErrUnknownNode       = NewErrCoded(404, "Unknown node")
	ErrUnknownJob        = NewErrCoded(404, "job not found")
	ErrUnknownEvaluation = NewErrCoded(404, "eval not found")
	ErrUnknownDeployment = NewErrCoded(404, "deployment not found")
)
