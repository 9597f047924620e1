package httpapi

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func TestPeriodicForceAndDispatchRoutes(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Periodic.Force", structs.PeriodicForceResponse{EvalID: "e1", EvalCreateIndex: 7, Index: 7})
	code, hdr, body := env.raw(t, "PUT", "/v1/job/a%2Fb/periodic/force?namespace=prod", "")
	if code != 200 || hdr.Get("X-Nomad-Index") != "7" || !strings.Contains(body, `"EvalID":"e1"`) {
		t.Fatalf("force: %d %q index %q", code, body, hdr.Get("X-Nomad-Index"))
	}
	if args := env.rpc.last(t, "Periodic.Force").(*structs.PeriodicForceRequest); args.JobID != "a/b" || args.Namespace != "prod" {
		t.Fatalf("force args %+v", args)
	}
	if code, _, _ := env.raw(t, "GET", "/v1/job/x/periodic/force", ""); code != 405 {
		t.Fatalf("GET force answered %d, want 405", code)
	}

	env.rpc.reply("Job.Dispatch", structs.JobDispatchResponse{DispatchedJobID: "p/dispatch-1-abcdef01", EvalID: "e2", Index: 9})
	code, hdr, body = env.raw(t, "PUT", "/v1/job/p/dispatch?idempotency_token=tok",
		`{"JobID":"p","Payload":"aGVsbG8=","Meta":{"k":"v"},"IdPrefixTemplate":"x","Priority":70}`)
	if code != 200 || hdr.Get("X-Nomad-Index") != "9" || !strings.Contains(body, `"DispatchedJobID":"p/dispatch-1-abcdef01"`) {
		t.Fatalf("dispatch: %d %q", code, body)
	}
	args := env.rpc.last(t, "Job.Dispatch").(*structs.JobDispatchRequest)
	if args.JobID != "p" || string(args.Payload) != "hello" || args.Meta["k"] != "v" || args.IdPrefixTemplate != "x" ||
		args.Priority != 70 || args.WriteRequest.IdempotencyToken != "tok" {
		t.Fatalf("dispatch args %+v", args)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/job/p/dispatch", `{"JobID":"other"}`); code != 400 || !strings.Contains(body, "does not match") {
		t.Fatalf("mismatched ID: %d %q", code, body)
	}

	code, _, _ = env.raw(t, "PUT", "/v1/job/p/dispatch/payload?meta.k=v", "raw bytes")
	if code != 200 {
		t.Fatalf("dispatch/payload: %d", code)
	}
	args = env.rpc.last(t, "Job.Dispatch").(*structs.JobDispatchRequest)
	if string(args.Payload) != "raw bytes" || args.Meta["k"] != "v" {
		t.Fatalf("raw dispatch args %+v", args)
	}
}
