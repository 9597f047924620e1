package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// job eval asks for an evaluation of the job (with -force-reschedule in
// EvalOptions) and prints its ID with -detach. Before, the verb did not
// exist: drover printed the job command's help and exited 1.
func TestJobEvalForceRescheduleDetach(t *testing.T) {
	const id = "7c5bd1c4-0000-4000-8000-000000000001"
	var mu sync.Mutex
	var bodies []api.JobEvaluateRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "10")
		switch r.Method + " " + r.URL.Path {
		case "GET /v1/job/example":
			json.NewEncoder(w).Encode(sampleJob())
		case "POST /v1/job/example/evaluate", "PUT /v1/job/example/evaluate":
			var b api.JobEvaluateRequest
			if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			json.NewEncoder(w).Encode(api.JobRegisterResponse{EvalID: id, EvalCreateIndex: 11})
		default:
			http.Error(w, "no route", 404)
		}
	}))
	t.Cleanup(srv.Close)

	out, errb, code := run(t, srv, "job", "eval", "-force-reschedule", "-detach", "example")
	if code != 0 || strings.TrimSpace(out) != `Created eval ID: "7c5bd1c4"` {
		t.Fatalf("code %d out %q err %q", code, out, errb)
	}
	out, errb, code = run(t, srv, "job", "eval", "-detach", "-verbose", "example")
	if code != 0 || !strings.Contains(out, id) {
		t.Fatalf("-verbose: code %d out %q err %q", code, out, errb)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0].JobID != "example" || !bodies[0].EvalOptions.ForceReschedule || bodies[1].EvalOptions.ForceReschedule {
		t.Fatalf("evaluate requests %+v", bodies)
	}
	if _, errb, code := run(t, srv, "job", "eval"); code != 1 || !strings.Contains(errb, "one argument") {
		t.Fatalf("no argument: code %d err %q", code, errb)
	}
}
