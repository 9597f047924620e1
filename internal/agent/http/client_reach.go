package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync/atomic"
	"time"

	hclog "github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/structs"
)

// NodeDialer opens a byte pipe to another node's agent HTTP API, through
// the server holding that node's session (internal/reach). It may be nil:
// requests about other nodes are then refused.
type NodeDialer interface {
	DialNode(ctx context.Context, nodeID string) (net.Conn, error)
}

// LocalAllocs says whether the local client runs an allocation. It may be
// nil when the agent runs no client.
type LocalAllocs interface {
	HasAlloc(allocID string) bool
}

// reachedHeader marks a request relayed to its node: the node serves it
// itself, never relays it again (no loops when state is stale).
const reachedHeader = "X-Drover-Reached-Node"

// localNodeID is this agent's client node ("" when it runs none).
func (s *server) localNodeID() string {
	switch {
	case s.cfg.Stats != nil:
		return s.cfg.Stats.NodeID()
	case s.cfg.NodeMeta != nil:
		return s.cfg.NodeMeta.NodeID()
	case s.cfg.Identity != nil:
		return s.cfg.Identity.NodeID()
	case s.cfg.GC != nil:
		return s.cfg.GC.NodeID()
	}
	return ""
}

// onAllocNode serves a /v1/client route naming an allocation (the first
// path segment after prefix) where the allocation runs: here when the
// local client runs it, otherwise relayed to its node's agent.
func (s *server) onAllocNode(prefix string, h apiHandler) apiHandler {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		parts, err := pathArgs(r, prefix)
		if err != nil || len(parts) == 0 || parts[0] == "" {
			return h(w, r)
		}
		nodeID, known, err := s.allocNode(r, parts[0])
		if err != nil {
			return nil, err
		}
		if !known && !strings.HasSuffix(r.URL.Path, "/exec") {
			// As Nomad, exec refuses after the upgrade, with the reason in
			// the close frame: the local handler does.
			return nil, structs.NewErrCoded(http.StatusNotFound, "Unknown allocation %q", parts[0])
		}
		if nodeID == "" {
			return h(w, r)
		}
		return s.relayToNode(w, r, nodeID)
	}
}

// allocNode says where allocation id is served: nodeID "" here (the local
// client runs it, the request was relayed already, this agent cannot
// relay, or the servers do not know it: known false), otherwise the node
// to relay to. The request was authorized in the allocation's namespace
// already; the lookup is made as the authorizer's are (objectLookupToken).
func (s *server) allocNode(r *http.Request, id string) (nodeID string, known bool, err error) {
	if r.Header.Get(reachedHeader) != "" || (s.cfg.Allocs != nil && s.cfg.Allocs.HasAlloc(id)) ||
		s.cfg.RPC == nil || s.cfg.Reach == nil {
		return "", true, nil
	}
	args := structs.AllocSpecificRequest{AllocID: id}
	args.Region = s.requestRegion(r)
	args.Namespace = requestNamespace(r)
	args.AuthToken = s.objectLookupToken(r)
	args.AllowStale = true
	var reply structs.SingleAllocResponse
	if err := s.cfg.RPC.RPC("Alloc.GetAlloc", &args, &reply); err != nil {
		return "", false, err
	}
	if reply.Alloc == nil {
		return "", false, nil
	}
	if reply.Alloc.NodeID == "" || reply.Alloc.NodeID == s.localNodeID() {
		return "", true, nil
	}
	return reply.Alloc.NodeID, true, nil
}

// onQueryNode serves a /v1/client route taking ?node_id= on that node:
// here when it is empty or names the local client, otherwise relayed.
func (s *server) onQueryNode(h apiHandler) apiHandler {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		id := r.URL.Query().Get("node_id")
		if id == "" && (r.Method == http.MethodPut || r.Method == http.MethodPost) && r.Body != nil {
			// api.NodeMetaApplyRequest names its node in the body.
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			var named struct{ NodeID string }
			if json.Unmarshal(b, &named) == nil {
				id = named.NodeID
			}
		}
		if id == "" || id == s.localNodeID() || r.Header.Get(reachedHeader) != "" || s.cfg.Reach == nil {
			return h(w, r)
		}
		if s.cfg.RPC != nil {
			// A clear 404 for a node that does not exist rather than
			// "no path" (prefixes are not accepted here, as in Nomad).
			args := structs.NodeSpecificRequest{NodeID: id}
			args.Region = s.requestRegion(r)
			args.AuthToken = requestToken(r)
			args.AllowStale = true
			var reply structs.SingleNodeResponse
			if err := s.cfg.RPC.RPC("Node.GetNode", &args, &reply); err != nil {
				return nil, err
			}
			if reply.Node == nil {
				return nil, structs.NewErrCoded(http.StatusNotFound, "Unknown node %q", id)
			}
		}
		return s.relayToNode(w, r, id)
	}
}

// relayToNode sends the request, unchanged, to the node's agent and its
// answer back as it comes (streams flush at once; websockets are spliced).
// When the HTTP caller goes away the pipe closes, which ends the request
// on the node.
func (s *server) relayToNode(w http.ResponseWriter, r *http.Request, nodeID string) (any, error) {
	// Dial first, so a node without a path gets a clear status.
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	conn, err := s.cfg.Reach.DialNode(ctx, nodeID)
	cancel()
	if err != nil {
		if code, _ := structs.ErrorCode(err); code >= 400 && code < 600 {
			return nil, err
		}
		return nil, structs.NewErrCoded(http.StatusServiceUnavailable, "no path to node %s: %v", nodeID, err)
	}
	var used atomic.Bool
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if used.CompareAndSwap(false, true) {
				return conn, nil
			}
			return s.cfg.Reach.DialNode(ctx, nodeID)
		},
		DisableKeepAlives:     true,
		DisableCompression:    true,
		ResponseHeaderTimeout: 0,
	}
	defer tr.CloseIdleConnections()
	var relayErr error
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "node-" + nodeID
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set(reachedHeader, nodeID)
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			relayErr = err
		},
		// What the proxy logs itself (a node stream that dropped in the
		// middle of its body) goes through the agent's logger and its
		// level, not the standard library's logger on stderr.
		ErrorLog: s.log.Named("relay").With("node", nodeID).StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
	}
	rp.ServeHTTP(w, r)
	if used.CompareAndSwap(false, true) {
		conn.Close() // never handed to the transport
	}
	if relayErr != nil {
		if r.Context().Err() != nil {
			return nil, nil // the caller went away
		}
		msg := relayErr.Error()
		if strings.Contains(msg, "no path to node") {
			return nil, structs.NewErrCoded(http.StatusServiceUnavailable, "%s", msg)
		}
		return nil, structs.NewErrCoded(http.StatusBadGateway, "relaying to node %s: %s", nodeID, msg)
	}
	return nil, nil
}

// objectLookupToken is the token a lookup of an object the request names
// carries: the agent's own (its node's secret) where the authorizer has
// one, since the caller's may hold only alloc-exec or alloc-lifecycle
// there, not read-job; else the caller's.
func (s *server) objectLookupToken(r *http.Request) string {
	if z, ok := s.cfg.Auth.(*ACLAuthorizer); ok && z.LookupToken != nil {
		return z.LookupToken()
	}
	return requestToken(r)
}
