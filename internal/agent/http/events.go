package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

// EventStreamer subscribes to a server's event stream. Nil in Config when
// this agent has none (a client-only agent, or enable_event_broker =
// false).
type EventStreamer interface {
	SubscribeEvents(req *events.Request) (EventSubscription, error)
}

// EventSubscription yields the stream's frame lines ({"Index":n,"Events":
// [...]}\n) until ctx is done or the subscription ends (an error).
type EventSubscription interface {
	NextFrame(ctx context.Context) ([]byte, error)
}

const (
	// eventHeartbeat is how often an idle stream sends {}
	// (Config.EventHeartbeat overrides it in tests).
	eventHeartbeat = 10 * time.Second
	// eventWriteTimeout bounds one write: a reader that stops reading is
	// disconnected after it, freeing its handler (the FSM never waits for
	// a reader in any case).
	eventWriteTimeout = 10 * time.Second
	// eventRecheck is how often a stream's token is checked again: a
	// token deleted, expired or stripped of its rights ends the streams
	// it opened within about this long.
	eventRecheck = time.Second
)

// /v1/event/stream?index=&topic=&namespace=&region=: the server's events as
// newline-delimited JSON, one {"Index","Events"} line per Raft entry,
// {} every 10 s while idle. A reader that falls behind the
// server's buffer gets a last {"Error": ...} line naming the index to
// resume from, and the stream ends.
func (s *server) eventStreamRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	req, err := events.ParseQuery(r.URL.Query())
	if req != nil {
		req.AuthToken = requestToken(r)
	}
	if err != nil {
		return nil, structs.NewErrCoded(http.StatusBadRequest, "%s", err.Error())
	}
	// Another region's stream is polled from its servers; one no server
	// knows is refused before the stream starts.
	if req.Region, err = s.otherRegion(r); err != nil {
		return nil, err
	}
	if s.cfg.Events == nil {
		if s.cfg.Agent != nil && !s.cfg.Agent.IsServer() {
			return nil, structs.NewErrCoded(http.StatusNotImplemented, "this agent runs no server: ask a server agent's HTTP API for /v1/event/stream")
		}
		return nil, structs.NewErrCoded(http.StatusNotImplemented, "the event stream is disabled on this server (server.enable_event_broker = false)")
	}
	s.streams.Add(1)
	s.streamsOpen.Add(1)
	defer func() {
		s.streamsOpen.Add(-1)
		s.streams.Done()
	}()
	if a := requestACL(r); req.Namespace == "*" && a != nil && !a.IsManagement() {
		req.AllowNamespace = s.eventNamespaceFilter(r, a)
	}
	sub, err := s.cfg.Events.SubscribeEvents(req)
	if err != nil {
		return nil, err
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := rc.Flush(); err != nil {
		return nil, nil
	}
	// The token was checked when the stream opened (the route's rule); it
	// is checked again before writing, at most every eventRecheck, so a
	// revoked token stops receiving events. A stream forwarded to a
	// server (TokenCheckedUpstream) is checked there at every poll.
	token, checked := requestToken(r), time.Now()
	recheck := s.cfg.EventRecheck
	if recheck <= 0 {
		recheck = eventRecheck
	}
	_, upstream := sub.(interface{ TokenCheckedUpstream() bool })
	stillAllowed := func() error {
		if upstream || time.Since(checked) < recheck || s.cfg.Auth == nil {
			return nil
		}
		checked = time.Now()
		return s.cfg.Auth.Authorize(r, token)
	}
	ctx := r.Context()
	heartbeat := s.cfg.EventHeartbeat
	if heartbeat <= 0 {
		heartbeat = eventHeartbeat
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, heartbeat)
		frame, err := sub.NextFrame(wctx)
		cancel()
		if ctx.Err() == nil {
			// Only a refusal ends the stream: a check that could not be
			// made (no server reachable) is made again later.
			if aerr := stillAllowed(); aerr != nil {
				if code, msg := structs.ErrorCode(aerr); code == http.StatusForbidden || errors.Is(aerr, structs.ErrPermissionDenied) {
					b, _ := json.Marshal(map[string]string{"Error": msg})
					_ = write(append(b, '\n'))
					return nil, nil
				}
			}
		}
		switch {
		case err == nil:
			if write(frame) != nil {
				return nil, nil
			}
		case ctx.Err() != nil:
			return nil, nil // the reader went away
		case errors.Is(err, context.DeadlineExceeded):
			if write([]byte("{}\n")) != nil {
				return nil, nil
			}
		default:
			var fb *events.FellBehindError
			if errors.As(err, &fb) {
				s.log.Warn("event stream reader dropped: it fell behind the buffer", "remote", r.RemoteAddr, "resume_index", fb.Next)
			}
			b, _ := json.Marshal(map[string]string{"Error": err.Error()})
			_ = write(append(b, '\n'))
			return nil, nil
		}
	}
}

// eventNamespaceFilter is the filter of a stream of every namespace read
// with a token that is not a management token: the namespaces the token
// may read jobs in, its rights resolved again at most every eventRecheck
// (before an event is matched, so a policy change applies from the next
// event on). A token refused at a new resolution sees nothing more (the
// stream's own check then ends it); one that cannot be resolved now (no
// server) keeps the rights last resolved.
func (s *server) eventNamespaceFilter(r *http.Request, a *acl.ACL) func(string) bool {
	var current atomic.Pointer[acl.ACL]
	current.Store(a)
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	recheck := s.cfg.EventRecheck
	if recheck <= 0 {
		recheck = eventRecheck
	}
	ra, canResolve := s.cfg.Auth.(requestAuthorizer)
	token := requestToken(r)
	return func(ns string) bool {
		if now := time.Now().UnixNano(); canResolve && time.Duration(now-last.Load()) >= recheck {
			last.Store(now)
			nr, err := ra.AuthorizeRequest(r, token)
			if err == nil {
				if na := requestACL(nr); na != nil {
					current.Store(na)
				}
			} else if code, _ := structs.ErrorCode(err); code == http.StatusForbidden || errors.Is(err, structs.ErrPermissionDenied) {
				current.Store(nil)
			}
		}
		cur := current.Load()
		return cur != nil && (cur.IsManagement() || cur.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob))
	}
}
