package cli

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// followReconnectFor is how long `alloc logs -f` keeps trying to reconnect
// after losing its stream (the agent restarts; its tasks keep running and
// their output keeps being written).
const followReconnectFor = 2 * time.Minute

// followLogs is AllocFS().Logs with follow, resumed where it stopped when
// the connection to the agent breaks: it reconnects from the start of the
// logs and skips what it has already passed on, so no line is lost or
// repeated. An error the agent answers (unknown allocation, bad request)
// ends it as before. warn is told once per outage.
func followLogs(client *api.Client, alloc *api.Allocation, task, logType, origin string, offset int64,
	cancel <-chan struct{}, warn func(error)) (<-chan *api.StreamFrame, <-chan error) {
	out := make(chan *api.StreamFrame, 10)
	errOut := make(chan error, 1)
	go func() {
		var pos logPosition
		var lostAt time.Time
		for {
			inner := make(chan struct{})
			frames, errCh := client.AllocFS().Logs(alloc, true, task, logType, origin, offset, inner, nil)
			var err error
		stream:
			for {
				select {
				case f, ok := <-frames:
					if !ok {
						close(inner)
						close(out)
						return
					}
					if f = pos.skip(f); f == nil {
						continue
					}
					lostAt = time.Time{}
					select {
					case out <- f:
					case <-cancel:
						close(inner)
						return
					}
				case err = <-errCh:
					break stream
				case <-cancel:
					close(inner)
					return
				}
			}
			close(inner)
			var apiErr api.UnexpectedResponseError
			if err == nil || errors.As(err, &apiErr) {
				errOut <- err // the agent's answer, not a lost connection
				return
			}
			// The api client wraps errors of an established stream as
			// decode failures; anything else before any data means the
			// first connection failed: that is the answer.
			streamed := pos.known || strings.HasPrefix(err.Error(), "failed to decode")
			if lostAt.IsZero() && !streamed {
				errOut <- err
				return
			}
			if lostAt.IsZero() {
				lostAt = time.Now()
				warn(err)
			} else if time.Since(lostAt) > followReconnectFor {
				errOut <- err
				return
			}
			select {
			case <-time.After(250 * time.Millisecond):
			case <-cancel:
				return
			}
			origin, offset = "start", 0
		}
	}()
	return out, errOut
}

// logPosition is how far a follow has got: the rotated file (its index)
// and the offset in it after the last byte passed on.
type logPosition struct {
	known  bool
	index  int
	offset int64
}

// skip returns the part of f past the position (nil when none) and moves
// the position to f's end.
func (p *logPosition) skip(f *api.StreamFrame) *api.StreamFrame {
	if f.File == "" || len(f.Data) == 0 {
		return f
	}
	idx, err := strconv.Atoi(f.File[strings.LastIndexByte(f.File, '.')+1:])
	if err != nil {
		return f
	}
	start := f.Offset - int64(len(f.Data))
	if p.known {
		switch {
		case idx < p.index:
			return nil
		case idx == p.index && f.Offset <= p.offset:
			return nil
		case idx == p.index && start < p.offset:
			c := *f
			c.Data = f.Data[p.offset-start:]
			f = &c
		}
	}
	p.known, p.index, p.offset = true, idx, f.Offset
	return f
}
