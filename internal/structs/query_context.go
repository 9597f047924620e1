package structs

import (
	"context"
	"time"
)

// A read's context lives in its QueryOptions, which every read request
// embeds, so that it reaches the endpoint through the in-process call (the
// arguments are copied as they are) and through the RPC connection (the
// server's codec gives each request the context of the stream it came on,
// cancelled when the caller closes the stream) without changing the shape
// of any request. It is never encoded.

// WithContext makes ctx the read's context: a blocking query ends when ctx
// is done (the HTTP client went away, the forwarding server gave up).
func (q *QueryOptions) WithContext(ctx context.Context) { q.ctx = ctx }

// Context is the read's context (context.Background when none was set).
func (q *QueryOptions) Context() context.Context {
	if q.ctx == nil {
		return context.Background()
	}
	return q.ctx
}

// IsRead marks a request as a read: sending it again after a failure whose
// outcome is unknown cannot change anything.
func (q *QueryOptions) IsRead() bool { return true }

// ContextCarrier is a request that carries a context (every read).
type ContextCarrier interface {
	WithContext(ctx context.Context)
	Context() context.Context
}

// RequestContext returns the context args carries, or Background.
func RequestContext(args any) context.Context {
	if c, ok := args.(ContextCarrier); ok {
		return c.Context()
	}
	return context.Background()
}

// IsReadRequest reports whether args is a read request.
func IsReadRequest(args any) bool {
	r, ok := args.(interface{ IsRead() bool })
	return ok && r.IsRead()
}

// ServerWait is how long a call may rightly wait on the server before it
// answers: a blocking read's wait time, a dequeue's timeout. A server that
// forwards the call allows this much on top of its forwarding deadline.
type ServerWait interface {
	ServerWait() time.Duration
}

// ServerWait is the blocking query's wait (MaxQueryTime, or the most a
// server allows when none is given); 0 for a read that does not block.
func (q *QueryOptions) ServerWait() time.Duration {
	if q.MinQueryIndex == 0 {
		return 0
	}
	if q.MaxQueryTime <= 0 || q.MaxQueryTime > MaxBlockingQueryTime {
		return MaxBlockingQueryTime
	}
	return q.MaxQueryTime
}

// MaxBlockingQueryTime bounds a blocking query's wait.
const MaxBlockingQueryTime = 300 * time.Second

// ServerWait is the dequeue's timeout.
func (r *EvalDequeueRequest) ServerWait() time.Duration { return r.Timeout }
