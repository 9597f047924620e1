package server

import (
	"net/http"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

// Event serves this server's own event stream to agents without one
// (client-only agents forwarding /v1/event/stream). Never forwarded: every
// server applies every entry, so each has the whole stream.
type Event struct{ srv *Server }

// Poll answers one bounded long poll of the stream (events.Broker.Poll).
func (e *Event) Poll(args *events.PollRequest, reply *events.PollResponse) error {
	if e.srv.events == nil {
		return structs.NewErrCoded(http.StatusNotImplemented, "the event stream is disabled on this server (server.enable_event_broker = false)")
	}
	return e.srv.events.Poll(args, reply)
}
