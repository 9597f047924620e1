package structs

import "context"

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
