package rpc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"os"
	"syscall"
	"testing"

	"github.com/hashicorp/yamux"
)

// Only errors raised while the request was written make a call "never
// sent" (safe to send to the next leader); an error while its answer was
// read leaves the outcome unknown and must reach the caller as it is. CI
// saw the first kind as a raw error: a follower's pooled session to a
// leader that had just died failed its write with "writev: broken pipe",
// and the forwarded write failed instead of waiting for the next leader.
func TestUnsentOnlyForWriteSideErrors(t *testing.T) {
	opErr := func(op string, errno syscall.Errno) error {
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"session gone before the write", yamux.ErrSessionShutdown, true},
		{"stream closed under the write (CI)", yamux.ErrStreamClosed, true},
		{"stream reset: a read may return it too", yamux.ErrConnectionReset, false},
		{"writev broken pipe (CI)", opErr("writev", syscall.EPIPE), true},
		{"write reset", opErr("write", syscall.ECONNRESET), true},
		{"wrapped write error", fmt.Errorf("forwarding: %w", opErr("writev", syscall.EPIPE)), true},
		{"read reset: the request may have run", opErr("read", syscall.ECONNRESET), false},
		{"stream ended before the answer", io.ErrUnexpectedEOF, false},
		{"client shut down", rpc.ErrShutdown, false},
		{"the server's own error", rpc.ServerError("job not found"), false},
		{"dial refused (already a ConnectError)", errors.New("connection refused"), false},
	} {
		if got := unsent(tc.err); got != tc.want {
			t.Errorf("%s: unsent(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// A connection that ended after the call was sent (a read may go to
// another server, a write's outcome is unknown) is told apart from a call
// never sent, the server's own answer and a server that is only slow.
func TestIsConnectionLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"stream ended before the answer", io.ErrUnexpectedEOF, true},
		{"wrapped EOF", fmt.Errorf("forwarding: %w", io.EOF), true},
		{"client shut down", rpc.ErrShutdown, true},
		{"session gone", yamux.ErrSessionShutdown, true},
		{"read reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"never sent", &ConnectError{Addr: "127.0.0.1:1", Err: io.EOF}, false},
		{"the server's own error", rpc.ServerError("job not found"), false},
		{"the server did not answer in time", fmt.Errorf("%w: Job.List to 127.0.0.1:1", ErrCallTimeout), false},
		{"none", nil, false},
	} {
		if got := IsConnectionLost(tc.err); got != tc.want {
			t.Errorf("%s: IsConnectionLost(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
