package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/drover-project/drover/internal/structs"
)

// Nomad's ws_handshake protocol for exec: a browser cannot set headers on a
// websocket, so with ?ws_handshake=true the caller's first message is
// {"version":1,"auth_token":"..."}. Authorization then waits for that
// message: the agent upgrades, reads it, and runs the route table's check
// with its token (the X-Nomad-Token header when it has none) before
// anything runs. A refusal closes the socket with a policy-violation frame
// whose reason is the error ("Permission denied").

// handshakeTimeout bounds the wait for the first message.
const handshakeTimeout = 30 * time.Second

// isHandshakeExec: an exec websocket request asking for ws_handshake.
func isHandshakeExec(r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Query().Get("ws_handshake") != "true" || !websocket.IsWebSocketUpgrade(r) {
		return false
	}
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	return len(segs) == 5 && segs[0] == "v1" && segs[1] == "client" && segs[2] == "allocation" && segs[3] != "" && segs[4] == "exec"
}

// wsHandshake is the first message of the protocol.
type wsHandshake struct {
	Version   int    `json:"version"`
	AuthToken string `json:"auth_token"`
}

// handshakeExec serves an exec request with ws_handshake=true (wrap sends
// it here instead of authorizing it from the headers).
func (s *server) handshakeExec(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	allocID, err := url.PathUnescape(segs[3])
	if err != nil {
		s.writeError(w, r, structs.NewErrCoded(http.StatusBadRequest, "invalid allocation ID %q", segs[3]))
		return
	}
	task, command, tty, err := parseExecQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	conn, err := (&websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}).Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	defer conn.Close()
	refuse := func(err error) {
		code, msg := structs.ErrorCode(err)
		if len(msg) > 120 { // a close frame's reason is at most 123 bytes
			msg = msg[:120]
		}
		wsCode := websocket.CloseInternalServerErr
		if code >= 400 && code < 500 {
			wsCode = websocket.ClosePolicyViolation
		}
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(wsCode, msg), time.Now().Add(10*time.Second))
		// Wait briefly for the peer's close (reading what it sent
		// meanwhile, such as its terminal size): closing a socket with
		// unread data resets it, and the peer then never sees the reason
		// (a browser reports 1006).
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				break
			}
		}
	}

	_ = conn.SetReadDeadline(time.Now().Add(handshakeTimeout))
	var hs wsHandshake
	if err := conn.ReadJSON(&hs); err != nil {
		refuse(structs.NewErrCoded(http.StatusBadRequest, "expected the ws_handshake message {\"version\":1,\"auth_token\":...}"))
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	if hs.Version != 1 {
		refuse(structs.NewErrCoded(http.StatusBadRequest, "unsupported websocket protocol version %d", hs.Version))
		return
	}
	token := hs.AuthToken
	if token == "" {
		token = requestToken(r)
	}

	// The request as it would have come with the token as a header: the
	// route table's check runs on it, and a relay sends it to the node.
	r2 := r.Clone(r.Context())
	r2.Header.Del("Authorization")
	r2.Header.Del("X-Nomad-Token")
	if token != "" {
		r2.Header.Set("X-Nomad-Token", token)
	}
	q := r2.URL.Query()
	q.Del("ws_handshake")
	r2.URL.RawQuery = q.Encode()
	if ra, ok := s.cfg.Auth.(requestAuthorizer); ok {
		ar, err := ra.AuthorizeRequest(r2, token)
		if err != nil {
			refuse(err)
			return
		}
		r2 = ar
	} else if err := s.cfg.Auth.Authorize(r2, token); err != nil {
		refuse(err)
		return
	}

	nodeID, _, err := s.allocNode(r2, allocID)
	if err != nil {
		refuse(err)
		return
	}
	if nodeID != "" {
		if err := s.relayExecSocket(conn, r2, nodeID); err != nil {
			refuse(err)
		}
		return
	}
	if err := s.checkNodeExec(r2, allocID, task); err != nil {
		refuse(err)
		return
	}
	s.runExec(r2.Context(), conn, allocID, task, command, tty)
}

// relayExecSocket opens the exec websocket on the node's agent, with the
// token as X-Nomad-Token (the node authorizes it again), and pipes the
// frames both ways until either side closes. An error means the node's
// socket could not be opened; conn is then still the caller's to close.
func (s *server) relayExecSocket(conn *websocket.Conn, r *http.Request, nodeID string) error {
	d := websocket.Dialer{
		NetDialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return s.cfg.Reach.DialNode(ctx, nodeID)
		},
		HandshakeTimeout: 15 * time.Second,
		ReadBufferSize:   4096,
		WriteBufferSize:  4096,
	}
	h := http.Header{}
	if t := r.Header.Get("X-Nomad-Token"); t != "" {
		h.Set("X-Nomad-Token", t)
	}
	h.Set(reachedHeader, nodeID)
	u := "ws://node-" + nodeID + r.URL.EscapedPath() + "?" + r.URL.RawQuery
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	nc, resp, err := d.DialContext(ctx, u, h)
	cancel()
	if err != nil {
		if resp != nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			resp.Body.Close()
			return structs.NewErrCoded(resp.StatusCode, "%s", strings.TrimSpace(string(b)))
		}
		if code, _ := structs.ErrorCode(err); code >= 400 && code < 600 {
			return err
		}
		return structs.NewErrCoded(http.StatusServiceUnavailable, "no path to node %s: %v", nodeID, err)
	}
	defer nc.Close()

	// The caller's frames to the node; its close (or its going away)
	// closes the node's socket, which stops the command there.
	go func() {
		for {
			mt, b, err := conn.ReadMessage()
			if err != nil {
				code, text := websocket.CloseGoingAway, ""
				if ce, ok := err.(*websocket.CloseError); ok {
					code, text = ce.Code, ce.Text
				}
				_ = nc.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(5*time.Second))
				nc.Close()
				return
			}
			if err := nc.WriteMessage(mt, b); err != nil {
				return
			}
		}
	}()
	// The node's frames to the caller, its close frame (the exit or the
	// refusal) included.
	for {
		mt, b, err := nc.ReadMessage()
		if err != nil {
			code, text := websocket.CloseInternalServerErr, "relaying to node "+nodeID+": connection lost"
			if ce, ok := err.(*websocket.CloseError); ok {
				code, text = ce.Code, ce.Text
			}
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(5*time.Second))
			return nil
		}
		_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if err := conn.WriteMessage(mt, b); err != nil {
			return nil
		}
	}
}
