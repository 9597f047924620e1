package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

var (
	errNoClient      = structs.NewErrCoded(400, "no client: this agent does not run a Nomad client")
	errNoAllocID     = structs.NewErrCoded(400, "must provide a valid alloc id")
	errNoFileName    = structs.NewErrCoded(400, "must provide a file name")
	errNoTask        = structs.NewErrCoded(400, "must provide task name")
	errBadLogType    = structs.NewErrCoded(400, "must provide log type (stdout/stderr)")
	errBadOrigin     = structs.NewErrCoded(400, "origin must be start or end")
	streamHeartbeat  = 5 * time.Second // keeps idle followed streams alive
	heartbeatFrame   = []byte("{}")
	streamFrameDepth = 32
)

// fsArgs checks the client and returns the alloc ID after prefix.
func (s *server) fsArgs(r *http.Request, prefix string) (string, error) {
	if r.Method != http.MethodGet {
		return "", errInvalidMethod
	}
	if s.cfg.FS == nil {
		return "", errNoClient
	}
	parts, err := pathArgs(r, prefix)
	if err != nil {
		return "", err
	}
	if len(parts) != 1 || parts[0] == "" {
		return "", errNoAllocID
	}
	return parts[0], nil
}

// /v1/client/fs/ls/<alloc>?path=
func (s *server) fsListRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	alloc, err := s.fsArgs(r, "/v1/client/fs/ls/")
	if err != nil {
		return nil, err
	}
	path := r.URL.Query().Get("path")
	if path == "" {
		path = "/"
	}
	files, err := s.cfg.FS.FSList(alloc, path)
	if err != nil {
		return nil, err
	}
	return nonNil(files), nil
}

// /v1/client/fs/stat/<alloc>?path=
func (s *server) fsStatRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	alloc, err := s.fsArgs(r, "/v1/client/fs/stat/")
	if err != nil {
		return nil, err
	}
	path := r.URL.Query().Get("path")
	if path == "" {
		return nil, errNoFileName
	}
	info, err := s.cfg.FS.FSStat(alloc, path)
	if err != nil {
		return nil, err
	}
	return info, nil
}

// /v1/client/fs/cat/<alloc>?path=
func (s *server) fsCatRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	alloc, err := s.fsArgs(r, "/v1/client/fs/cat/")
	if err != nil {
		return nil, err
	}
	return s.fsRead(w, r, alloc, 0, 0)
}

// /v1/client/fs/readat/<alloc>?path=&offset=&limit=
func (s *server) fsReadAtRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	alloc, err := s.fsArgs(r, "/v1/client/fs/readat/")
	if err != nil {
		return nil, err
	}
	offset, err := intParam(r, "offset", 0)
	if err != nil {
		return nil, err
	}
	limit, err := intParam(r, "limit", 0)
	if err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, structs.NewErrCoded(400, "offset must be non-negative")
	}
	return s.fsRead(w, r, alloc, offset, limit)
}

func (s *server) fsRead(w http.ResponseWriter, r *http.Request, alloc string, offset, limit int64) (any, error) {
	path := r.URL.Query().Get("path")
	if path == "" {
		return nil, errNoFileName
	}
	rc, err := s.cfg.FS.FSReadAt(alloc, path, offset, limit)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, rc); err != nil {
		return nil, err
	}
	return nil, nil
}

// streamOpts are the parameters shared by stream and logs.
func streamOpts(r *http.Request, followDefault bool) (origin string, offset int64, follow bool, err error) {
	origin = r.URL.Query().Get("origin")
	switch origin {
	case "":
		origin = "start"
	case "start", "end":
	default:
		return "", 0, false, errBadOrigin
	}
	if offset, err = intParam(r, "offset", 0); err != nil {
		return "", 0, false, err
	}
	if offset < 0 {
		return "", 0, false, structs.NewErrCoded(400, "offset must be non-negative")
	}
	follow, err = boolParam(r, "follow", followDefault)
	return origin, offset, follow, err
}

// /v1/client/fs/stream/<alloc>?path=&offset=&origin=&follow= (follow
// defaults to true, as in Nomad).
func (s *server) fsStreamRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	alloc, err := s.fsArgs(r, "/v1/client/fs/stream/")
	if err != nil {
		return nil, err
	}
	path := r.URL.Query().Get("path")
	if path == "" {
		return nil, errNoFileName
	}
	origin, offset, follow, err := streamOpts(r, true)
	if err != nil {
		return nil, err
	}
	produce := func(ctx context.Context, out chan<- *api.StreamFrame) error {
		return s.cfg.FS.FSStream(ctx, alloc, path, origin, offset, follow, out)
	}
	return nil, s.streamFrames(w, r, follow, false, produce)
}

// /v1/client/fs/logs/<alloc>?task=&type=&follow=&plain=&origin=&offset=
func (s *server) fsLogsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	alloc, err := s.fsArgs(r, "/v1/client/fs/logs/")
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	task, logType := q.Get("task"), q.Get("type")
	if task == "" {
		return nil, errNoTask
	}
	if logType != "stdout" && logType != "stderr" {
		return nil, errBadLogType
	}
	origin, offset, follow, err := streamOpts(r, false)
	if err != nil {
		return nil, err
	}
	plain, err := boolParam(r, "plain", false)
	if err != nil {
		return nil, err
	}
	produce := func(ctx context.Context, out chan<- *api.StreamFrame) error {
		return s.cfg.FS.FSLogs(ctx, alloc, task, logType, origin, offset, follow, out)
	}
	return nil, s.streamFrames(w, r, follow, plain, produce)
}

// streamFrames runs produce and writes each frame as it arrives: JSON frames
// concatenated without separators (what api/fs.go decodes), or raw data when
// plain. The status is committed with the first byte, so an error before
// any output still gets its own status code. Followed streams send an empty
// heartbeat frame when idle (never in plain mode: it would corrupt the data).
func (s *server) streamFrames(w http.ResponseWriter, r *http.Request, follow, plain bool,
	produce func(context.Context, chan<- *api.StreamFrame) error) error {

	ctx, cancel := context.WithCancel(r.Context())
	frames := make(chan *api.StreamFrame, streamFrameDepth)
	done := make(chan error, 1)
	produced := make(chan struct{}) // closed when produce has returned
	go func() {
		defer close(produced)
		done <- produce(ctx, frames)
	}()
	defer func() {
		cancel()
		// Keep the producer unblocked until it returns; it closes nothing.
		// (It waits on produced, not done: the loop below may have taken
		// done's value already, and a drainer waiting on done then waited
		// for good, one goroutine per reader gone mid-flush.)
		go func() {
			for {
				select {
				case <-frames:
				case <-produced:
					return
				}
			}
		}()
	}()

	rc := http.NewResponseController(w)
	started := false
	start := func() {
		if started {
			return
		}
		started = true
		if plain {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(http.StatusOK)
	}
	write := func(f *api.StreamFrame) error {
		start()
		if plain {
			if len(f.Data) > 0 {
				if _, err := w.Write(f.Data); err != nil {
					return err
				}
			}
		} else {
			b, err := json.Marshal(f)
			if err != nil {
				return err
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		_ = rc.Flush()
		return nil
	}

	var heartbeat <-chan time.Time
	if follow && !plain {
		t := time.NewTicker(streamHeartbeat)
		defer t.Stop()
		heartbeat = t.C
	}
	for {
		select {
		case f := <-frames:
			if f == nil {
				continue
			}
			if err := write(f); err != nil {
				return nil // the reader went away
			}
		case err := <-done:
			// Sends completed before produce returned: flush what is queued.
			for {
				select {
				case f := <-frames:
					if f != nil && write(f) != nil {
						return nil
					}
					continue
				default:
				}
				break
			}
			if err != nil && !started && ctx.Err() == nil {
				return err
			}
			if err != nil && ctx.Err() == nil {
				s.log.Warn("stream ended with an error", "path", r.URL.Path, "error", err)
				brokenStream(w, rc, plain, err)
			}
			start()
			_ = rc.Flush()
			return nil
		case <-heartbeat:
			start()
			if _, err := w.Write(heartbeatFrame); err != nil {
				return nil
			}
			_ = rc.Flush()
		case <-ctx.Done():
			return nil
		}
	}
}

// brokenStream ends a stream whose producer failed after the status was
// sent, so that no reader mistakes it for a complete one (a follower would
// stop following): JSON frames are followed by the error's text, which no
// frame decoder accepts (what Nomad does: the api client reports "failed to
// decode log endpoint response as JSON: <text>"); raw data cannot carry
// it, so the connection is cut before the end of the chunked body.
func brokenStream(w http.ResponseWriter, rc *http.ResponseController, plain bool, err error) {
	if plain {
		panic(http.ErrAbortHandler)
	}
	_, _ = io.WriteString(w, err.Error())
	_ = rc.Flush()
}
