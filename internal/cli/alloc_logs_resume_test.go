package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// restartingAgent plays an agent whose log stream for task "t" is lost in
// every way an agent restart loses it; each connection to the logs endpoint
// runs the next step of script.
type restartingAgent struct {
	mu    sync.Mutex
	files [2]string // t.stdout.0 (complete), t.stdout.1 (growing)
	lines int
	dead  bool
	// lsForbidden: the token may read logs, not list the alloc dir.
	lsForbidden bool
	lsDelay     time.Duration // how long a listing takes (an agent half up)
	offsets     []string      // "origin offset" of each logs request
	script      []func(w http.ResponseWriter, offset int64)
}

func (a *restartingAgent) grow(n int) {
	for range n {
		a.lines++
		a.files[1] += fmt.Sprintf("line %03d\n", a.lines)
	}
}

func (a *restartingAgent) all() string { return a.files[0] + a.files[1] }

// frames are the log from the concatenated offset, a frame per line, at
// most limit bytes (all when limit < 0).
func (a *restartingAgent) frames(offset, limit int64) []*api.StreamFrame {
	var out []*api.StreamFrame
	for i, content := range a.files {
		size := int64(len(content))
		if offset >= size && i < len(a.files)-1 {
			offset -= size
			continue
		}
		for offset < size && limit != 0 {
			end := offset + int64(strings.IndexByte(content[offset:], '\n')) + 1
			if limit > 0 {
				end = min(end, offset+limit)
				limit -= end - offset
			}
			out = append(out, &api.StreamFrame{File: fmt.Sprintf("alloc/logs/t.stdout.%d", i), Offset: end, Data: []byte(content[offset:end])})
			offset = end
		}
		offset = 0
	}
	return out
}

// serve answers frames (after a heartbeat frame "{}" with heartbeat).
func (a *restartingAgent) serve(w http.ResponseWriter, frames []*api.StreamFrame, heartbeat bool) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if heartbeat {
		w.Write([]byte("{}"))
	}
	for _, f := range frames {
		b, _ := json.Marshal(f)
		w.Write(b)
		w.(http.Flusher).Flush()
	}
}

func (a *restartingAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case r.URL.Path == "/v1/allocations":
		json.NewEncoder(w).Encode([]*api.AllocationListStub{{ID: allocID}})
	case r.URL.Path == "/v1/allocation/"+allocID:
		state := "running"
		if a.dead {
			state = "dead"
		}
		json.NewEncoder(w).Encode(&api.Allocation{ID: allocID, TaskGroup: "g", ClientStatus: "running",
			TaskStates: map[string]*api.TaskState{"t": {State: state}}})
	case r.URL.Path == "/v1/client/fs/ls/"+allocID && a.lsForbidden:
		http.Error(w, "Permission denied", http.StatusForbidden)
	case r.URL.Path == "/v1/client/fs/ls/"+allocID && r.URL.Query().Get("path") == "/alloc/logs":
		time.Sleep(a.lsDelay) // the agent's own slowness, not synchronisation
		json.NewEncoder(w).Encode([]*api.AllocFileInfo{
			{Name: ".t.stdout.fifo"}, {Name: "t.stderr.0", Size: 5},
			{Name: "t.stdout.0", Size: int64(len(a.files[0]))}, {Name: "t.stdout.1", Size: int64(len(a.files[1]))}})
	case r.URL.Path == "/v1/client/fs/logs/"+allocID:
		q := r.URL.Query()
		off, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
		a.offsets = append(a.offsets, q.Get("origin")+" "+q.Get("offset"))
		if len(a.offsets) > len(a.script) {
			http.Error(w, "unexpected reconnect", http.StatusInternalServerError)
			return
		}
		a.script[len(a.offsets)-1](w, off)
	default:
		http.Error(w, "no route "+r.URL.Path, http.StatusNotFound)
	}
}

// `alloc logs -f` follows a task's log through everything an agent restart
// does to the stream, reconnecting from the exact byte it had printed: every
// byte is printed once, and it ends when the task is reported dead.
func TestAllocLogsFollowResumesAcrossAgentRestart(t *testing.T) {
	defer func(a, b, c, d time.Duration) {
		followRetryMin, followRetryMax, followGiveUpAfter, followSettle = a, b, c, d
	}(followRetryMin, followRetryMax, followGiveUpAfter, followSettle)
	// retryMax is also how long a quiet stream must stay open to end an
	// outage: far above what the empty answer below takes on a loaded
	// machine (at 20 ms, a slow moment made it a second outage). The
	// backoff never reaches it here (5, 10, 20 ms).
	followRetryMin, followRetryMax, followGiveUpAfter, followSettle = 5*time.Millisecond, 2*time.Second, 20*time.Second, 200*time.Millisecond

	a := &restartingAgent{}
	a.grow(10)
	a.files[0], a.files[1] = a.files[1], "" // a rotated file, then the current one
	a.grow(10)
	first := int64(len(a.all()))
	var cut int64
	a.script = []func(http.ResponseWriter, int64){
		// The agent stops: its stream ends cleanly though the task runs
		// on (what detaching the tasks did).
		func(w http.ResponseWriter, off int64) { a.serve(w, a.frames(off, -1), false) },
		// A server with no path to the node meanwhile.
		func(w http.ResponseWriter, off int64) {
			http.Error(w, "no path to node n1", http.StatusServiceUnavailable)
		},
		// The connection drops before any answer.
		func(w http.ResponseWriter, off int64) {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		},
		// An empty 200 answer.
		func(w http.ResponseWriter, off int64) { w.WriteHeader(http.StatusOK) },
		// Back, with more written meanwhile: cut in the middle of a line,
		// and of the next frame.
		func(w http.ResponseWriter, off int64) {
			a.grow(5)
			cut = off + 13
			a.serve(w, a.frames(off, 13), false)
			w.Write([]byte(`{"File":"alloc/logs/t.stdout.1","Offs`))
		},
		// Back for good: heartbeat, the rest, and the task ends.
		func(w http.ResponseWriter, off int64) {
			a.grow(5)
			a.serve(w, a.frames(off, -1), true)
			a.dead = true
		},
	}
	srv := httptest.NewServer(a)
	defer srv.Close()

	out, errb, code := run(t, srv, "alloc", "logs", "-f", allocID, "t")
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.offsets) != len(a.script) {
		t.Fatalf("stopped following after %d of %d connections (exit %d, stderr %q); printed %q", len(a.offsets), len(a.script), code, errb, out)
	}
	if code != 0 || out != a.all() {
		t.Fatalf("exit %d; printed %d bytes of %d (want the whole log once)\nout %q\nstderr %q\nrequests %q",
			code, len(out), len(a.all()), out, errb, a.offsets)
	}
	want := []string{"start 0"}
	for range 4 {
		want = append(want, fmt.Sprintf("start %d", first))
	}
	want = append(want, fmt.Sprintf("start %d", cut))
	if strings.Join(a.offsets, ",") != strings.Join(want, ",") {
		t.Fatalf("reconnected at %q, want the byte printed last each time %q", a.offsets, want)
	}
	if strings.Count(errb, "Lost the log stream") != 2 || strings.Contains(errb, "Error reading logs") {
		t.Fatalf("stderr %q: want one warning per outage (two)", errb)
	}
}

// What ends a follow with an error: the agent answering that it does not
// know the allocation (a 4xx) after a restart, and an outage longer than
// the follower waits.
func TestAllocLogsFollowEnds(t *testing.T) {
	defer func(a, b, c, d time.Duration) {
		followRetryMin, followRetryMax, followGiveUpAfter, followSettle = a, b, c, d
	}(followRetryMin, followRetryMax, followGiveUpAfter, followSettle)
	followRetryMin, followRetryMax, followGiveUpAfter, followSettle = 5*time.Millisecond, 20*time.Millisecond, 300*time.Millisecond, 100*time.Millisecond

	cutFirst := func(a *restartingAgent) func(http.ResponseWriter, int64) {
		return func(w http.ResponseWriter, off int64) {
			a.serve(w, a.frames(off, -1), false)
			w.Write([]byte(`{"Fi`))
		}
	}
	unknown := func(w http.ResponseWriter, off int64) {
		http.Error(w, "Unknown allocation", http.StatusNotFound)
	}
	away := func(w http.ResponseWriter, off int64) {
		http.Error(w, "no path to node n1", http.StatusServiceUnavailable)
	}
	for _, tc := range []struct {
		name    string
		script  func(a *restartingAgent) []func(http.ResponseWriter, int64)
		wantErr string
	}{
		{"unknown after restart", func(a *restartingAgent) []func(http.ResponseWriter, int64) {
			return []func(http.ResponseWriter, int64){cutFirst(a), away, unknown}
		}, "Unknown allocation"},
		{"agent away too long", func(a *restartingAgent) []func(http.ResponseWriter, int64) {
			s := []func(http.ResponseWriter, int64){cutFirst(a)}
			for range 200 {
				s = append(s, away)
			}
			return s
		}, "no path to node n1"},
		{"first request refused", func(a *restartingAgent) []func(http.ResponseWriter, int64) {
			return []func(http.ResponseWriter, int64){away}
		}, "no path to node n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &restartingAgent{}
			a.grow(3)
			a.script = tc.script(a)
			srv := httptest.NewServer(a)
			defer srv.Close()
			start := time.Now()
			out, errb, code := run(t, srv, "alloc", "logs", "-f", allocID, "t")
			if code != 1 || !strings.Contains(errb, "Error reading logs") || !strings.Contains(errb, tc.wantErr) {
				t.Fatalf("exit %d, stderr %q", code, errb)
			}
			if tc.name != "first request refused" && out != a.all() {
				t.Fatalf("printed %q before the end, want %q", out, a.all())
			}
			if tc.name == "agent away too long" && time.Since(start) > 5*time.Second {
				t.Fatalf("gave up after %s (limit %s)", time.Since(start), followGiveUpAfter)
			}
		})
	}
}

// A token that may read logs but not list the alloc dir: the follower
// cannot compute where to resume, so it starts over and skips exactly what
// it printed.
func TestAllocLogsFollowResumesWithoutListing(t *testing.T) {
	defer func(a, b, c, d time.Duration) {
		followRetryMin, followRetryMax, followGiveUpAfter, followSettle = a, b, c, d
	}(followRetryMin, followRetryMax, followGiveUpAfter, followSettle)
	followRetryMin, followRetryMax, followGiveUpAfter, followSettle = 5*time.Millisecond, 20*time.Millisecond, 20*time.Second, 200*time.Millisecond

	a := &restartingAgent{lsForbidden: true}
	a.grow(4)
	a.script = []func(http.ResponseWriter, int64){
		func(w http.ResponseWriter, off int64) {
			a.serve(w, a.frames(off, 22), false) // two lines and a half
			w.Write([]byte(`{"Fi`))
		},
		func(w http.ResponseWriter, off int64) {
			a.grow(3)
			a.serve(w, a.frames(off, -1), false)
			a.dead = true
		},
	}
	srv := httptest.NewServer(a)
	defer srv.Close()
	out, errb, code := run(t, srv, "alloc", "logs", "-f", allocID, "t")
	a.mu.Lock()
	defer a.mu.Unlock()
	if code != 0 || out != a.all() || strings.Join(a.offsets, ",") != "start 0,start 0" {
		t.Fatalf("exit %d, requests %q; printed %q, want %q (stderr %q)", code, a.offsets, out, a.all(), errb)
	}
}

// An agent half up lists the alloc dir slowly, then answers the log request
// with an empty stream: that is still the same outage (one warning), not a
// quiet stream that stayed open. Before, the follower counted the listing's
// time as the stream's and warned again for each such reconnect.
func TestAllocLogsFollowSlowListingIsOneOutage(t *testing.T) {
	defer func(a, b, c, d time.Duration) {
		followRetryMin, followRetryMax, followGiveUpAfter, followSettle = a, b, c, d
	}(followRetryMin, followRetryMax, followGiveUpAfter, followSettle)
	// A listing (600 ms) far longer than a stream must stay open to end
	// an outage (250 ms); an empty answer ends at once.
	followRetryMin, followRetryMax, followGiveUpAfter, followSettle = 5*time.Millisecond, 250*time.Millisecond, 20*time.Second, 100*time.Millisecond

	a := &restartingAgent{lsDelay: 600 * time.Millisecond}
	a.grow(3)
	a.script = []func(http.ResponseWriter, int64){
		func(w http.ResponseWriter, off int64) {
			a.serve(w, a.frames(off, -1), false)
			w.Write([]byte(`{"Fi`))
		},
		func(w http.ResponseWriter, off int64) { w.WriteHeader(http.StatusOK) },
		func(w http.ResponseWriter, off int64) {
			a.grow(2)
			a.serve(w, a.frames(off, -1), false)
			a.dead = true
		},
	}
	srv := httptest.NewServer(a)
	defer srv.Close()
	out, errb, code := run(t, srv, "alloc", "logs", "-f", allocID, "t")
	a.mu.Lock()
	defer a.mu.Unlock()
	if code != 0 || out != a.all() || len(a.offsets) != len(a.script) {
		t.Fatalf("exit %d, requests %q; printed %q, want %q (stderr %q)", code, a.offsets, out, a.all(), errb)
	}
	if n := strings.Count(errb, "Lost the log stream"); n != 1 {
		t.Fatalf("%d warnings for one outage; stderr %q", n, errb)
	}
}
