package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func TestValidateDispatchTable(t *testing.T) {
	cfg := func(payload string) *structs.ParameterizedJobConfig {
		return &structs.ParameterizedJobConfig{Payload: payload, MetaRequired: []string{"input"}, MetaOptional: []string{"mode"}}
	}
	big := make([]byte, structs.DispatchPayloadSizeLimit+1)
	for _, tc := range []struct {
		name    string
		cfg     *structs.ParameterizedJobConfig
		payload []byte
		meta    map[string]string
		wantErr string
	}{
		{"ok optional no payload", cfg(""), nil, map[string]string{"input": "a"}, ""},
		{"ok optional with payload", cfg("optional"), []byte("x"), map[string]string{"input": "a", "mode": "m"}, ""},
		{"required payload missing", cfg("required"), nil, map[string]string{"input": "a"}, "Payload is not provided"},
		{"forbidden payload given", cfg("forbidden"), []byte("x"), map[string]string{"input": "a"}, "Payload is not allowed"},
		{"payload too big", cfg(""), big, map[string]string{"input": "a"}, "Payload exceeds maximum size"},
		{"missing required meta", cfg(""), nil, nil, "required meta keys: [input]"},
		{"unknown meta", cfg(""), nil, map[string]string{"input": "a", "color": "red"}, "unpermitted metadata keys: [color]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := structs.ValidateDispatch(tc.cfg, tc.payload, tc.meta)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestJobDispatch(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	parent := testJob("proc", 1)
	parent.Type = structs.JobTypeBatch
	parent.Meta = map[string]string{"owner": "ops"}
	parent.ParameterizedJob = &structs.ParameterizedJobConfig{Payload: "required", MetaRequired: []string{"input"}}
	parent.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	parent.TaskGroups[0].Tasks[0].DispatchPayload = &structs.DispatchPayloadConfig{File: "input.txt"}
	if resp := register(t, s, parent); resp.EvalID != "" {
		t.Fatalf("parameterized parent got an eval")
	}

	var resp structs.JobDispatchResponse
	err := s.RPC("Job.Dispatch", &structs.JobDispatchRequest{JobID: "proc", Payload: []byte("hi")}, &resp)
	if err == nil || !strings.Contains(err.Error(), "input") {
		t.Fatalf("dispatch without required meta: %v, want an error naming \"input\"", err)
	}
	if code, _ := structs.ErrorCode(err); code != 400 {
		t.Fatalf("missing meta answered %d, want 400", code)
	}
	if err := s.RPC("Job.Dispatch", &structs.JobDispatchRequest{JobID: "nope"}, &resp); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("dispatch of unknown job: %v", err)
	}

	args := &structs.JobDispatchRequest{JobID: "proc", Payload: []byte("hello"), Meta: map[string]string{"input": "a.txt"}, IdempotencyToken: "tok"}
	if err := s.RPC("Job.Dispatch", args, &resp); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.DispatchedJobID, "proc/dispatch-") || len(resp.DispatchedJobID) != len("proc/dispatch-")+10+1+8 {
		t.Fatalf("dispatched ID %q, want proc/dispatch-<unix>-<8 hex>", resp.DispatchedJobID)
	}
	if resp.EvalID == "" || resp.JobCreateIndex == 0 || resp.EvalCreateIndex == 0 {
		t.Fatalf("reply incomplete: %+v", resp)
	}
	child, _ := s.State().JobByID(nil, "default", resp.DispatchedJobID)
	if child == nil || !child.Dispatched || child.ParentID != "proc" || string(child.Payload) != "hello" ||
		child.Meta["input"] != "a.txt" || child.Meta["owner"] != "ops" {
		t.Fatalf("child %+v", child)
	}
	evalDone(t, s, resp.EvalID)
	waitFor(t, 10*time.Second, "child allocation", func() bool { return len(allocsOf(t, s, child.ID)) == 1 })

	// The same idempotency token returns the same child.
	var again structs.JobDispatchResponse
	if err := s.RPC("Job.Dispatch", args, &again); err != nil {
		t.Fatal(err)
	}
	if again.DispatchedJobID != resp.DispatchedJobID || again.EvalID != "" {
		t.Fatalf("repeated token dispatched %q (eval %q), want %q", again.DispatchedJobID, again.EvalID, resp.DispatchedJobID)
	}
	sum, _ := s.State().JobSummaryByID(nil, "default", "proc")
	if sum.Children == nil || sum.Children.Pending+sum.Children.Running+sum.Children.Dead != 1 {
		t.Fatalf("children summary %+v, want one child", sum.Children)
	}
}
