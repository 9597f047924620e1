package server

import (
	"net/http"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

// Event serves this server's own event stream to agents without one
// (client-only agents forwarding /v1/event/stream). Never forwarded within
// a region: every server applies every entry, so each has the whole
// stream. A poll of another region's stream goes to one of its servers.
type Event struct{ srv *Server }

// Poll answers one bounded long poll of the stream (events.Broker.Poll).
func (e *Event) Poll(args *events.PollRequest, reply *events.PollResponse) error {
	if r := args.Req.Region; r != "" && r != e.srv.config.Region {
		return e.srv.forwardRegion(r, "Event.Poll", args, reply)
	}
	if e.srv.events == nil {
		return structs.NewErrCoded(http.StatusNotImplemented, "the event stream is disabled on this server (server.enable_event_broker = false)")
	}
	var token *acl.ACL
	if err := e.srv.authorize(args.Req.AuthToken, func(a *acl.ACL) bool {
		token = a
		return allowEventRequest(a, &args.Req)
	}); err != nil {
		return err
	}
	if args.Req.Namespace == "*" && token != nil && !token.IsManagement() {
		// Every namespace: only the events of those the token may read
		// jobs in.
		args.Req.AllowNamespace = func(ns string) bool { return token.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob) }
	}
	return e.srv.events.Poll(args, reply)
}

// allowEventRequest is what a stream's topics need: read-job in its
// namespace (a stream of every namespace is filtered instead) for job, evaluation, allocation, deployment and service events,
// node:read for node events; anything else (ACL topics, every topic)
// a management token.
func allowEventRequest(a *acl.ACL, req *events.Request) bool {
	if a.IsManagement() {
		return true
	}
	if len(req.Topics) == 0 {
		return false
	}
	for topic := range req.Topics {
		switch topic {
		case events.TopicJob, events.TopicAllocation, events.TopicEvaluation, events.TopicDeployment, events.TopicService:
			if req.Namespace != "*" && !a.AllowNamespaceOperation(namespaceOf(req.Namespace), acl.NamespaceCapabilityReadJob) {
				return false
			}
		case events.TopicNode:
			if !a.AllowNodeRead() {
				return false
			}
		default:
			return false
		}
	}
	return true
}
