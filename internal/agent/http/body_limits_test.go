package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// jobBodyWithNesting is a register body whose task config holds a value
// nested depth levels deep.
func jobBodyWithNesting(depth int) string {
	return `{"Job":{"ID":"web","Name":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"raw_exec","Config":{"nest":` +
		strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth) + `}}]}]}}`
}

func (f *fakeRPC) called(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

// A task config nested 3,000 levels deep decoded here, was committed to Raft
// and then failed to decode on every server (500, and `apply failed` on
// every restart). It is now a 400 naming the problem, and never proposed.
func TestDeepJSONBodyIsRefused(t *testing.T) {
	env := newEnv(t, nil)
	for _, path := range []string{"/v1/jobs", "/v1/job/web", "/v1/job/web/plan", "/v1/validate/job"} {
		code, _, body := env.raw(t, "PUT", path, jobBodyWithNesting(3000))
		if code != 400 || !strings.Contains(body, "more than 100 levels deep") {
			t.Fatalf("%s: got %d %q, want 400 naming the depth", path, code, body)
		}
	}
	// Brackets inside strings are text, not nesting.
	code, _, body := env.raw(t, "PUT", "/v1/jobs", strings.Replace(jobBodyWithNesting(1), `1}`, `"`+strings.Repeat(`[{\"`, 500)+`"}`, 1))
	if code != 200 {
		t.Fatalf("brackets in a string: got %d %q", code, body)
	}
	if n := env.rpc.called("Job.Register"); n != 1 {
		t.Fatalf("Job.Register called %d times, want only the shallow job", n)
	}
	// A config within the limit (a job's own structure takes seven levels).
	if code, _, body := env.raw(t, "PUT", "/v1/jobs", jobBodyWithNesting(MaxJSONDepth-7)); code != 200 {
		t.Fatalf("config at the limit: got %d %q", code, body)
	}
}

// hideLength makes a request body of unknown length (sent chunked).
type hideLength struct{ r io.Reader }

func (h hideLength) Read(p []byte) (int, error) { return h.r.Read(p) }

// A 50 MB job was accepted and held many times over in memory. A body over
// the limit is now a 413, whether it declares its length or not.
func TestOversizedBodyIsRefused(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.MaxBodyBytes = 4096 })
	big := jobBodyWithNesting(1)
	big = strings.Replace(big, `"nest"`, `"pad":"`+strings.Repeat("x", 8192)+`","nest"`, 1)

	code, _, body := env.raw(t, "PUT", "/v1/jobs", big)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "limit is 4096 bytes") || !strings.Contains(body, "http_max_body_size") {
		t.Fatalf("declared length: got %d %q", code, body)
	}
	req, _ := http.NewRequest("PUT", env.srv.URL+"/v1/jobs", hideLength{strings.NewReader(big)})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "more than 4096 bytes") {
		t.Fatalf("chunked: got %d %q", resp.StatusCode, b)
	}
	if n := env.rpc.called("Job.Register"); n != 0 {
		t.Fatalf("an oversized body reached the server %d times", n)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/jobs", jobBodyWithNesting(1)); code != 200 {
		t.Fatalf("a small body after the refusals: %d %q", code, body)
	}

	// The default applies when none is configured.
	def := newEnv(t, nil)
	code, _, body = def.raw(t, "PUT", "/v1/jobs", strings.Repeat(" ", DefaultMaxBodyBytes+1))
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("default limit: got %d %q", code, body)
	}
}

// /v1/jobs/parse refuses HCL source over MaxJobspecBytes before parsing.
func TestJobsParseRefusesHugeJobspec(t *testing.T) {
	parsed := 0
	env := newEnv(t, func(c *Config) {
		c.ParseJob = func(string, string, bool) (*api.Job, error) {
			parsed++
			return &api.Job{ID: new("x")}, nil
		}
	})
	_, err := env.client.Jobs().ParseHCL(`job "x" {}`+strings.Repeat("#", MaxJobspecBytes), false)
	wantStatus(t, err, http.StatusRequestEntityTooLarge, "Job spec too large to parse")
	if parsed != 0 {
		t.Fatal("an oversized jobspec was parsed")
	}
}
