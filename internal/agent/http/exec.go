package httpapi

import (
	"context"
	"encoding/json"
	"github.com/drover-project/drover/internal/acl"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// ClientExec runs commands inside the local client's tasks. It may be nil
// when the agent runs no client.
type ClientExec interface {
	// AllocExec runs the command; a coded 4xx error says why it cannot.
	AllocExec(ctx context.Context, allocID, task string, opts drivers.ExecOptions) (int, error)
}

// hostExecChecker is implemented by a ClientExec that can say whether an
// exec would run on the host's filesystem (see checkNodeExec).
type hostExecChecker interface {
	ExecOnHost(allocID, task string) (ns string, onHost bool)
}

// checkNodeExec refuses, as Nomad does, an exec into a task whose driver
// isolates no filesystem (raw_exec) unless the caller also holds
// alloc-node-exec in the allocation's namespace: such a command runs on
// the node itself. With ACLs off (no ACL on r) everything is allowed.
func (s *server) checkNodeExec(r *http.Request, allocID, task string) error {
	a := requestACL(r)
	if a == nil || a.IsManagement() {
		return nil
	}
	hc, ok := s.cfg.Exec.(hostExecChecker)
	if !ok {
		return nil
	}
	ns, onHost := hc.ExecOnHost(allocID, task)
	if onHost && !a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityAllocNodeExec) {
		return errPermissionDenied
	}
	return nil
}

// execHeartbeat keeps an idle exec session's websocket alive.
const execHeartbeat = 10 * time.Second

// /v1/client/allocation/<alloc>/exec?task=&command=["cmd",...]&tty=: a
// websocket, as Nomad's `alloc exec`.
func (s *server) allocExecRequest(w http.ResponseWriter, r *http.Request, allocID string) (any, error) {
	task, command, tty, err := parseExecQuery(r)
	if err != nil {
		return nil, err
	}
	// As Nomad: a malformed request is refused with a status; what the
	// client refuses (unknown allocation or task, a driver that cannot
	// exec) closes the websocket with the reason, which the api client
	// returns as the error.
	if err := s.checkNodeExec(r, allocID, task); err != nil {
		return nil, err
	}
	conn, err := (&websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}).Upgrade(w, r, nil)
	if err != nil {
		return nil, err // the upgrader has answered
	}
	defer conn.Close()
	s.runExec(r.Context(), conn, allocID, task, command, tty)
	return nil, nil
}

// parseExecQuery reads the task, command and tty parameters.
func parseExecQuery(r *http.Request) (task string, command []string, tty bool, err error) {
	q := r.URL.Query()
	task = q.Get("task")
	if task == "" {
		return "", nil, false, errNoTask
	}
	if err := json.Unmarshal([]byte(q.Get("command")), &command); err != nil || len(command) == 0 || command[0] == "" {
		return "", nil, false, structs.NewErrCoded(400, `command must be a non-empty JSON list of strings, such as ["/bin/sh"]`)
	}
	if v := q.Get("tty"); v != "" {
		if tty, err = strconv.ParseBool(v); err != nil {
			return "", nil, false, structs.NewErrCoded(400, "tty must be true or false, got %q", v)
		}
	}
	return task, command, tty, nil
}

// runExec bridges the websocket frames (api.ExecStreamingInput in,
// api.ExecStreamingOutput out) and the driver's exec.
func (s *server) runExec(ctx context.Context, conn *websocket.Conn, allocID, task string, command []string, tty bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wmu sync.Mutex
	send := func(f *api.ExecStreamingOutput) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		return conn.WriteJSON(f)
	}

	stdinR, stdinW := io.Pipe()
	defer stdinR.Close()
	resize := make(chan drivers.TerminalSize, 1)
	go func() {
		defer stdinW.Close()
		for {
			var in api.ExecStreamingInput
			if err := conn.ReadJSON(&in); err != nil {
				cancel() // the caller went away: stop the command
				return
			}
			if in.Stdin != nil {
				if len(in.Stdin.Data) > 0 {
					if _, err := stdinW.Write(in.Stdin.Data); err != nil {
						return
					}
				}
				if in.Stdin.Close {
					stdinW.Close()
				}
			}
			if in.TTYSize != nil && in.TTYSize.Height > 0 && in.TTYSize.Width > 0 {
				select {
				case resize <- drivers.TerminalSize{Height: uint(in.TTYSize.Height), Width: uint(in.TTYSize.Width)}:
				default:
				}
			}
		}
	}()
	// The command ends when its caller goes away: the reader above sees it,
	// unless it is blocked handing stdin to a command that does not read
	// it; then the heartbeat's failing write does (before, the command ran
	// on until it exited by itself, `sleep` or `tail -f` never).
	go func() {
		hb := s.cfg.execHeartbeat
		if hb <= 0 {
			hb = execHeartbeat
		}
		t := time.NewTicker(hb)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if send(&api.ExecStreamingOutput{}) != nil {
					cancel()
					return
				}
			}
		}
	}()
	// A reader blocked on stdin is released once the command ends.
	go func() {
		<-ctx.Done()
		stdinR.CloseWithError(ctx.Err())
	}()

	code, err := -1, error(nil)
	if s.cfg.Exec != nil {
		code, err = s.cfg.Exec.AllocExec(ctx, allocID, task, drivers.ExecOptions{
			Command: command, Tty: tty, Stdin: stdinR,
			Stdout: frameWriter{send: send, stderr: false},
			Stderr: frameWriter{send: send, stderr: true},
			Resize: resize,
		})
	}
	if s.cfg.Exec == nil || isNotFound(err) {
		err = s.execElsewhere(allocID, s.cfg.Exec == nil)
	}
	wmu.Lock()
	defer wmu.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err != nil {
		code, msg := structs.ErrorCode(err)
		if len(msg) > 120 { // a close frame's reason is at most 123 bytes
			msg = msg[:120]
		}
		wsCode := websocket.CloseInternalServerErr
		if code >= 400 && code < 500 {
			wsCode = websocket.ClosePolicyViolation
		}
		_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(wsCode, msg))
		return
	}
	_ = conn.WriteJSON(&api.ExecStreamingOutput{Exited: true, Result: &api.ExecStreamingExitResult{ExitCode: code}})
	_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
}

// isNotFound: the local client does not run the allocation.
func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	code, msg := structs.ErrorCode(err)
	return code == http.StatusNotFound && strings.HasPrefix(msg, "Unknown allocation")
}

// execElsewhere explains an allocation this agent's client does not run
// (for exec and stats) when the request could not be relayed to its node
// (onAllocNode): unknown to the servers too, or placed on another node.
func (s *server) execElsewhere(allocID string, noClient bool) error {
	unknown := structs.NewErrCoded(http.StatusNotFound, "Unknown allocation %q", allocID)
	if s.cfg.RPC == nil {
		if noClient {
			return errNoClient
		}
		return unknown
	}
	args := structs.AllocSpecificRequest{AllocID: allocID}
	args.Region = s.cfg.Region
	var reply structs.SingleAllocResponse
	if err := s.cfg.RPC.RPC("Alloc.GetAlloc", &args, &reply); err != nil {
		return err
	}
	if reply.Alloc == nil {
		return unknown
	}
	return structs.NewErrCoded(http.StatusBadRequest, "allocation %s runs on node %s, not on this agent's client: run the command against that node's agent", allocID, reply.Alloc.NodeID)
}

// frameWriter sends what a command writes as stdout or stderr frames.
type frameWriter struct {
	send   func(*api.ExecStreamingOutput) error
	stderr bool
}

func (f frameWriter) Write(p []byte) (int, error) {
	op := &api.ExecStreamingIOOperation{Data: append([]byte(nil), p...)}
	out := &api.ExecStreamingOutput{Stdout: op}
	if f.stderr {
		out = &api.ExecStreamingOutput{Stderr: op}
	}
	if err := f.send(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
