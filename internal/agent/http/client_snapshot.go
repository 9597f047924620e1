package httpapi

import (
	"io"
	"net/http"
)

// ClientAllocSnapshot writes a local allocation's migrating data (its
// alloc/data and tasks' local/ directories) as a gzipped tar, for the
// holder of its migrate token.
type ClientAllocSnapshot interface {
	SnapshotAlloc(allocID, token string, w io.Writer) error
}

// /v1/client/allocation/<alloc>/snapshot (GET): the archive another
// client fetches to migrate a sticky ephemeral disk. The X-Nomad-Token
// header (or ?token=) carries the migrate token the servers gave that
// client; anything else is refused with 403 before a byte is sent.
func (s *server) allocSnapshotRequest(w http.ResponseWriter, r *http.Request, allocID string) (any, error) {
	if s.cfg.AllocSnapshot == nil {
		return nil, s.execElsewhere(allocID, true)
	}
	pw := &lazyHeaderWriter{w: w}
	if err := s.cfg.AllocSnapshot.SnapshotAlloc(allocID, requestToken(r), pw); err != nil {
		if !pw.started {
			return nil, err
		}
		// Headers are out: the truncated archive fails the receiver.
		panic(http.ErrAbortHandler)
	}
	pw.start()
	return nil, nil
}

// lazyHeaderWriter sends the 200 and its content type with the first
// byte, so an error before it is still answered with its own status.
type lazyHeaderWriter struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyHeaderWriter) start() {
	if !l.started {
		l.started = true
		l.w.Header().Set("Content-Type", "application/octet-stream")
		l.w.WriteHeader(http.StatusOK)
	}
}

func (l *lazyHeaderWriter) Write(p []byte) (int, error) {
	l.start()
	return l.w.Write(p)
}
