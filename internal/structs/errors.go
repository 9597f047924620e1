package structs

import (
	"errors"
	"fmt"
)

// CodedError carries the HTTP status a failure maps to. RPC endpoints and the
// client return it for bad input (400), missing objects (404) and the like;
// the HTTP layer writes Code and Message. Anything else is a 500.
type CodedError struct {
	Code    int
	Message string
}

func (e *CodedError) Error() string { return e.Message }

// NewErrCoded builds a CodedError.
func NewErrCoded(code int, format string, args ...any) error {
	return &CodedError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the HTTP status an error maps to (500 if uncoded).
// Coded errors that crossed an RPC connection arrive as strings of the form
// "<code>: <message>" and are recognised too.
func ErrorCode(err error) (int, string) {
	var ce *CodedError
	if errors.As(err, &ce) {
		return ce.Code, ce.Message
	}
	return 500, err.Error()
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
