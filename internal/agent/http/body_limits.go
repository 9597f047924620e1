package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/drover-project/drover/internal/structs"
)

// Limits on what a request body may hold. Nomad has neither: without them a
// 50 MB job was accepted and a task config nested 3,000 levels deep was
// committed to Raft and then failed to decode on every server (the FSM's
// msgpack decoder stops at 1,024 levels).
const (
	// DefaultMaxBodyBytes bounds every request body (agent config
	// `limits { http_max_body_size }`). A larger body is refused with 413
	// before it is read.
	DefaultMaxBodyBytes = 8 << 20

	// MaxJSONDepth bounds how deeply a JSON body may nest objects and arrays.
	// A job's own structure uses about ten levels (Job, TaskGroups, Tasks,
	// Services, Checks, ...), leaving ninety for a task's config.
	MaxJSONDepth = 100

	// MaxJobspecBytes bounds the HCL source (plus variables) that
	// /v1/jobs/parse parses: HCL's parser holds a token and syntax node per
	// few bytes, tens of times the source. 1 MiB is Nomad's default
	// job_max_source_size, the most source it keeps with a job.
	MaxJobspecBytes = 1 << 20
)

// limitBody makes r's body refuse to read past the server's limit. A body
// that declares a larger Content-Length is refused before any of it is read.
func (s *server) limitBody(w http.ResponseWriter, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	limit := s.cfg.MaxBodyBytes
	if r.URL.Path == "/v1/operator/snapshot" {
		limit = max(limit, maxSnapshotUpload) // a snapshot restore
	}
	if r.ContentLength > limit {
		return bodyTooLarge(r.ContentLength, limit)
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	return nil
}

func bodyTooLarge(size, limit int64) error {
	if size > 0 {
		return structs.NewErrCoded(http.StatusRequestEntityTooLarge,
			"Request body too large: %d bytes, the limit is %d bytes (agent config limits.http_max_body_size)", size, limit)
	}
	return structs.NewErrCoded(http.StatusRequestEntityTooLarge,
		"Request body too large: more than %d bytes (agent config limits.http_max_body_size)", limit)
}

// checkJobspecSize refuses HCL source larger than MaxJobspecBytes with 413.
func checkJobspecSize(hcl, vars string) error {
	if n := len(hcl) + len(vars); n > MaxJobspecBytes {
		return structs.NewErrCoded(http.StatusRequestEntityTooLarge,
			"Job spec too large to parse: %d bytes of HCL and variables, the limit is %d bytes", n, MaxJobspecBytes)
	}
	return nil
}

// errTooDeep is returned by a depthLimitReader when the JSON nests deeper
// than its limit.
type errTooDeep struct{ limit int }

func (e *errTooDeep) Error() string {
	return fmt.Sprintf("Request body nests JSON objects and arrays more than %d levels deep", e.limit)
}

// depthLimitReader passes a JSON text through unchanged and fails the read
// that would take it past max levels of objects and arrays, so a decoder
// never builds (or recurses into) a value deeper than that. It tracks only
// strings and brackets; syntax errors are left to the decoder.
type depthLimitReader struct {
	r        io.Reader
	max      int
	depth    int
	inString bool
	escaped  bool
}

func (d *depthLimitReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	for i := 0; i < n; i++ {
		c := p[i]
		if d.inString {
			switch {
			case d.escaped:
				d.escaped = false
			case c == '\\':
				d.escaped = true
			case c == '"':
				d.inString = false
			}
			continue
		}
		switch c {
		case '"':
			d.inString = true
		case '{', '[':
			d.depth++
			if d.depth > d.max {
				return 0, &errTooDeep{limit: d.max}
			}
		case '}', ']':
			d.depth--
		}
	}
	return n, err
}

// bodyError turns an error reading a request body into the answer a client
// should see: 413 past the size limit, 400 past the depth limit, nil when it
// is neither.
func bodyError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return bodyTooLarge(0, tooLarge.Limit)
	}
	var tooDeep *errTooDeep
	if errors.As(err, &tooDeep) {
		return structs.NewErrCoded(http.StatusBadRequest, "%s", tooDeep.Error())
	}
	return nil
}
