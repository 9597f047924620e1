package events

import (
	"context"
	"errors"
	"time"
)

// PollRequest asks a server for the frames of its stream from Req.Index
// on: how an agent without a server (a client-only agent) forwards
// /v1/event/stream, one bounded long poll after another. Continue marks a
// poll that follows one which returned frames up to Req.Index-1: a batch
// that left the server's buffer meanwhile is then an error, not a gap.
type PollRequest struct {
	Req      Request
	Continue bool
	Wait     time.Duration // how long to wait for a first frame; capped by MaxPollWait
}

// PollResponse carries frame lines (as written to HTTP) and Last, the
// index of the last batch the poll went through, matching or not (0:
// none): the next poll continues from Last+1. Err ends the stream (the
// reader fell behind, the server shuts down).
type PollResponse struct {
	Frames [][]byte
	Last   uint64
	Err    string
}

// MaxPollWait bounds a poll's wait; pollBytes the frames one answer holds.
const (
	MaxPollWait = 5 * time.Second
	pollBytes   = 1 << 20
)

// Poll answers one PollRequest from the broker.
func (b *Broker) Poll(args *PollRequest, reply *PollResponse) error {
	req := args.Req
	var sub *Subscription
	if args.Continue {
		s, err := b.Resume(&req)
		if err != nil {
			reply.Err = err.Error()
			return nil
		}
		sub = s
	} else {
		sub = b.Subscribe(&req)
	}
	wait := args.Wait
	if wait <= 0 || wait > MaxPollWait {
		wait = MaxPollWait
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	defer func() { reply.Last = sub.last }()
	size := 0
	for size < pollBytes {
		f, err := sub.NextFrame(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return nil
			}
			if len(reply.Frames) == 0 {
				reply.Err = err.Error()
			}
			return nil
		}
		reply.Frames = append(reply.Frames, f)
		size += len(f)
		// After the first frame, take only what is already buffered.
		if len(reply.Frames) == 1 {
			cancel()
			ctx, cancel = context.WithCancel(context.Background())
			cancel()
		}
	}
	return nil
}
