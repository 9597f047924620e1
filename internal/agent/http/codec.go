package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// apiHandler serves one route. It returns the object to encode as JSON, or
// an error to write as status + text/plain. A nil object with a nil error
// means the handler wrote the response itself (or wants an empty 200).
type apiHandler func(w http.ResponseWriter, r *http.Request) (any, error)

// withStatus lets a handler answer a JSON body with a non-200 status (as
// /v1/agent/health does when unhealthy).
type withStatus struct {
	code int
	obj  any
}

// maxQueryTime caps ?wait, as Nomad does.
const maxQueryTime = 300 * time.Second

var (
	errInvalidMethod = structs.NewErrCoded(http.StatusMethodNotAllowed, "Invalid method")
	errNotFound      = structs.NewErrCoded(http.StatusNotFound, "Not found")
)

// trackingWriter remembers whether the response was started, so an error
// after the first byte is logged instead of corrupting the body.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

func (t *trackingWriter) Flush() {
	t.wrote = true
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// Hijack lets a handler take the connection over (websockets).
func (t *trackingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := t.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be taken over")
	}
	t.wrote = true
	return h.Hijack()
}

// wrap bounds the body, runs the Authorizer, then the handler, then
// encodes the result. The body is bounded first so that an authorizer that
// reads the job's namespace from it reads no more than the limit.
func (s *server) wrap(h apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer func() {
			s.log.Debug("request complete", "method", r.Method, "path", r.URL.Path, "duration", time.Since(start))
		}()
		tw := &trackingWriter{ResponseWriter: w}
		if err := s.limitBody(tw, r); err != nil {
			s.writeError(tw, r, err)
			return
		}
		if allow, bad := methodNotAllowed(r.Method, r.URL.EscapedPath()); bad {
			// A known route, a method it does not serve: 405 for any
			// token, before the authorizer (which would refuse a method
			// it has no rule for) and the handler.
			tw.Header().Set("Allow", allow)
			s.writeError(tw, r, errInvalidMethod)
			return
		}
		if isHandshakeExec(r) {
			// The token comes in the first message (exec_handshake.go).
			s.handshakeExec(tw, r)
			return
		}
		if ra, ok := s.cfg.Auth.(requestAuthorizer); ok {
			ar, err := ra.AuthorizeRequest(r, requestToken(r))
			if err != nil {
				s.writeError(tw, r, err)
				return
			}
			r = ar
		} else if err := s.cfg.Auth.Authorize(r, requestToken(r)); err != nil {
			s.writeError(tw, r, err)
			return
		}
		obj, err := h(tw, r)
		if err != nil {
			if tw.wrote {
				s.log.Warn("request failed after the response started", "method", r.Method, "path", r.URL.Path, "error", err)
				return
			}
			s.writeError(tw, r, err)
			return
		}
		if obj == nil || tw.wrote {
			return
		}
		code := http.StatusOK
		if ws, ok := obj.(withStatus); ok {
			code, obj = ws.code, ws.obj
		}
		obj = filterAnswer(r, obj)
		s.writeJSON(tw, r, code, obj)
	})
}

func (s *server) writeJSON(w http.ResponseWriter, r *http.Request, code int, obj any) {
	if list, ok := jsonList(obj); ok && !isPretty(r) {
		s.writeJSONList(w, r, code, list)
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if isPretty(r) {
		enc.SetIndent("", "    ")
	}
	if err := enc.Encode(obj); err != nil {
		s.writeError(w, r, fmt.Errorf("failed to encode response: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := errorStatus(err)
	if code >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", msg, "code", code)
	} else {
		s.log.Debug("request rejected", "method", r.Method, "path", r.URL.Path, "error", msg, "code", code)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}

// errorStatus maps an error to the HTTP status and body Nomad would answer.
func errorStatus(err error) (int, string) {
	code, msg := structs.ErrorCode(err)
	if code != http.StatusInternalServerError {
		return code, msg
	}
	// A coded error that crossed an RPC connection arrives as "<code>: <msg>".
	if len(msg) > 5 && msg[3] == ':' && msg[4] == ' ' {
		if n, perr := strconv.Atoi(msg[:3]); perr == nil && n >= 400 && n < 600 {
			return n, msg[5:]
		}
	}
	switch {
	case errors.Is(err, structs.ErrPermissionDenied),
		strings.HasSuffix(msg, structs.ErrPermissionDenied.Error()),
		strings.HasSuffix(msg, "ACL token not found"):
		return http.StatusForbidden, msg
	}
	return code, msg
}

func isPretty(r *http.Request) bool {
	v, ok := r.URL.Query()["pretty"]
	if !ok {
		return false
	}
	if len(v) == 0 || v[0] == "" {
		return true
	}
	b, err := strconv.ParseBool(v[0])
	return err == nil && b
}

// requestToken reads the ACL token from X-Nomad-Token or a Bearer header.
func requestToken(r *http.Request) string {
	if t := r.Header.Get("X-Nomad-Token"); t != "" {
		return t
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// parseQuery fills the common read options from the request.
func (s *server) parseQuery(r *http.Request, q *structs.QueryOptions) error {
	v := r.URL.Query()
	// A blocking query ends when its client goes away (the server's
	// goroutine would otherwise wait out the index or the wait time).
	q.WithContext(r.Context())
	q.Region = s.requestRegion(r)
	q.Namespace = requestNamespace(r)
	q.AuthToken = requestToken(r)
	var err error
	// ?stale (no value) and stale=true allow a stale read; anything but
	// a boolean is refused, as Nomad does, not read as true.
	if q.AllowStale, err = boolParam(r, "stale", false); err != nil {
		return err
	}
	q.Prefix = v.Get("prefix")
	q.Filter = v.Get("filter")
	q.NextToken = v.Get("next_token")
	if w := v.Get("wait"); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil || d < 0 {
			return structs.NewErrCoded(400, "Invalid wait time %q", w)
		}
		q.MaxQueryTime = min(d, maxQueryTime)
	}
	if i := v.Get("index"); i != "" {
		n, err := strconv.ParseUint(i, 10, 64)
		if err != nil {
			return structs.NewErrCoded(400, "Invalid index %q", i)
		}
		q.MinQueryIndex = n
	}
	if p := v.Get("per_page"); p != "" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return structs.NewErrCoded(400, "Invalid per_page %q", p)
		}
		q.PerPage = int32(n)
	}
	if q.Reverse, err = boolParam(r, "reverse", false); err != nil {
		return err
	}
	return nil
}

// parseWrite fills the common write options from the request.
func (s *server) parseWrite(r *http.Request, w *structs.WriteRequest) {
	w.Region = s.requestRegion(r)
	w.Namespace = requestNamespace(r)
	w.AuthToken = requestToken(r)
	w.IdempotencyToken = r.URL.Query().Get("idempotency_token")
}

func (s *server) requestRegion(r *http.Request) string {
	if reg := r.URL.Query().Get("region"); reg != "" {
		return reg
	}
	return s.cfg.Region
}

func requestNamespace(r *http.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return structs.DefaultNamespace
}

// boolParam parses an optional boolean query parameter. A parameter given
// without a value (?purge) counts as true.
func boolParam(r *http.Request, name string, def bool) (bool, error) {
	vals, ok := r.URL.Query()[name]
	if !ok {
		return def, nil
	}
	if len(vals) == 0 || vals[0] == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(vals[0])
	if err != nil {
		return false, structs.NewErrCoded(400, "Failed to parse value of %q (%v) as a bool: %v", name, vals[0], err)
	}
	return b, nil
}

// intParam parses an optional integer query parameter.
func intParam(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, structs.NewErrCoded(400, "Failed to parse value of %q (%v) as an integer: %v", name, v, err)
	}
	return n, nil
}

// decodeBody reads a JSON body into out. An empty body is an error unless
// optional is set; a body nested deeper than MaxJSONDepth is a 400, one
// larger than the server's limit a 413 (body_limits.go).
func decodeBody(r *http.Request, out any, optional bool) error {
	if r.Body == nil {
		if optional {
			return nil
		}
		return structs.NewErrCoded(400, "Request body is empty")
	}
	// The body is read whole first: a literal null is no body (several
	// of the api types' UnmarshalJSON dereference nil on it: a panic).
	var raw json.RawMessage
	err := json.NewDecoder(&depthLimitReader{r: r.Body, max: MaxJSONDepth}).Decode(&raw)
	if berr := bodyError(err); berr != nil {
		return berr
	}
	if err == nil && bytes.Equal(raw, []byte("null")) {
		if optional {
			return nil
		}
		return structs.NewErrCoded(400, "Request body is null")
	}
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF) && optional:
		return nil
	case errors.Is(err, io.EOF):
		return structs.NewErrCoded(400, "Request body is empty")
	default:
		return structs.NewErrCoded(400, "Failed to decode request body: %v", err)
	}
}

// setIndex sets X-Nomad-Index (writes).
func setIndex(w http.ResponseWriter, index uint64) {
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
}

// setMeta sets the blocking-query headers every read answers with.
func setMeta(w http.ResponseWriter, m *structs.QueryMeta) {
	setIndex(w, m.Index)
	w.Header().Set("X-Nomad-LastContact", strconv.FormatInt(m.LastContact.Milliseconds(), 10))
	w.Header().Set("X-Nomad-KnownLeader", strconv.FormatBool(m.KnownLeader))
	if m.NextToken != "" {
		w.Header().Set("X-Nomad-NextToken", m.NextToken)
	}
}

// pathArgs splits the escaped path after prefix into unescaped segments, so
// IDs containing an escaped "/" stay whole. "" yields no segments.
func pathArgs(r *http.Request, prefix string) ([]string, error) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if !ok || rest == "" {
		return nil, nil
	}
	parts := strings.Split(rest, "/")
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			return nil, structs.NewErrCoded(400, "Invalid path %q", r.URL.EscapedPath())
		}
		parts[i] = u
	}
	return parts, nil
}

// nonNil makes list responses encode as [] instead of null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func isWrite(m string) bool { return m == http.MethodPut || m == http.MethodPost }
