package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/fsm"
	"github.com/drover-project/drover/internal/fuzzseed"
	"github.com/drover-project/drover/internal/jobspec"
	droverserver "github.com/drover-project/drover/internal/server"
	"github.com/drover-project/drover/internal/structs"
)

// The job decoders' fuzz target: arbitrary bytes as the body of a job
// register, plan, validate or parse request, through the real handler, the
// api -> structs conversion and the server's admission (canonicalize and
// validate, as Job.Register runs it). What must hold: no panic, no 500 (bad
// input is a 4xx), and a job the server admits is one it can store: its
// Raft entry encodes, decodes and applies to a fresh FSM without error, and
// it encodes as JSON for a later GET.

// fuzzRoutes are the writes that decode a job; the fuzz input's route byte
// picks one.
var fuzzRoutes = []struct {
	name string
	path func(id string) string
}{
	{"register", func(string) string { return "/v1/jobs" }},
	{"register-id", func(id string) string { return "/v1/job/" + url.PathEscape(id) }},
	{"plan", func(id string) string { return "/v1/job/" + url.PathEscape(id) + "/plan" }},
	{"validate", func(string) string { return "/v1/validate/job" }},
	{"parse", func(string) string { return "/v1/jobs/parse" }},
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// admittingRPC answers the job RPCs as a server would up to the point of
// proposing: admission, then the checks that what would be proposed can be
// stored.
func admittingRPC(t *testing.T) *fakeRPC {
	rpc := newFakeRPC()
	rpc.handlers["Job.Register"] = func(args, reply any) error {
		req := args.(*structs.JobRegisterRequest)
		if _, err := droverserver.AdmitJob(req.Job); err != nil {
			return err
		}
		if req.Job.Namespace != structs.DefaultNamespace {
			return structs.NewErrCoded(400, "job %q is in nonexistent namespace %q", req.Job.ID, req.Job.Namespace)
		}
		mustStore(t, req)
		return nil
	}
	rpc.handlers["Job.Plan"] = func(args, reply any) error {
		_, err := droverserver.AdmitJob(args.(*structs.JobPlanRequest).Job)
		return err
	}
	rpc.handlers["Job.Validate"] = func(args, reply any) error {
		req := args.(*structs.JobValidateRequest)
		if req.Job == nil {
			return structs.NewErrCoded(400, "Job must be specified")
		}
		droverserver.ValidateJob(req.Job, reply.(*structs.JobValidateResponse))
		return nil
	}
	return rpc
}

// mustStore fails the test unless the admitted registration survives what
// the server does with it: a Raft entry that decodes and applies, and JSON.
func mustStore(t *testing.T, req *structs.JobRegisterRequest) {
	t.Helper()
	req.Job.SubmitTime = 1
	req.Eval = &structs.Evaluation{ID: "e1", Namespace: req.Job.Namespace, Priority: req.Job.Priority, Type: req.Job.Type,
		TriggeredBy: structs.EvalTriggerJobRegister, JobID: req.Job.ID, Status: structs.EvalStatusPending}
	entry, err := structs.Encode(structs.JobRegisterRequestType, req)
	if err != nil {
		t.Fatalf("admitted job does not encode as a Raft entry: %v", err)
	}
	var back structs.JobRegisterRequest
	if err := structs.Decode(entry[1:], &back); err != nil {
		t.Fatalf("admitted job's Raft entry does not decode: %v", err)
	}
	f, err := fsm.New(fsm.Config{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if resp := f.Apply(&raft.Log{Index: 5, Type: raft.LogCommand, Data: entry}); resp != nil {
		t.Fatalf("admitted job's Raft entry fails to apply (a poison entry): %v", resp)
	}
	if _, err := json.Marshal(req.Job); err != nil {
		t.Fatalf("admitted job does not encode as JSON: %v", err)
	}
}

func fuzzParseJob(hcl, vars string, canonicalize bool) (*api.Job, error) {
	job, err := jobspec.Parse("input.hcl", []byte(hcl), jobspec.ParseConfig{VarContent: vars})
	if err != nil {
		return nil, err
	}
	if canonicalize {
		job.Canonicalize()
	}
	return job, nil
}

// addJobSeeds registers every jobspec of the repository (the examples and
// the parser's golden inputs) as each route's body.
func addJobSeeds(f *testing.F) {
	paths, _ := filepath.Glob("../../jobspec/testdata/*.hcl")
	examples, _ := filepath.Glob("../../../examples/*.hcl")
	paths = append(paths, examples...)
	if len(paths) < 2 {
		f.Fatalf("jobspec seeds not found: %v", paths)
	}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".hcl")
		job, err := jobspec.Parse(p, src, jobspec.ParseConfig{})
		if err != nil { // the golden input that needs its variable values
			job, err = jobspec.Parse(p, src, jobspec.ParseConfig{ArgVars: []string{"count=4"},
				VarFiles: []string{"../../jobspec/testdata/variables.varfile"}})
		}
		if err != nil {
			f.Fatalf("%s: %v", p, err)
		}
		jobJSON, err := json.Marshal(job)
		if err != nil {
			f.Fatal(err)
		}
		fuzzseed.Add(f, name+"-register", byte(0), []byte(`{"Job":`+string(jobJSON)+`}`))
		fuzzseed.Add(f, name+"-plan", byte(2), []byte(`{"Job":`+string(jobJSON)+`,"Diff":true}`))
		fuzzseed.Add(f, name+"-validate", byte(3), []byte(`{"Job":`+string(jobJSON)+`}`))
		parse, _ := json.Marshal(&api.JobsParseRequest{JobHCL: string(src), Canonicalize: true})
		fuzzseed.Add(f, name+"-parse", byte(4), parse)
	}
	fuzzseed.Add(f, "register-id-minimal", byte(1), []byte(`{"Job":{"ID":"x","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"raw_exec","Config":{"command":"/bin/true"}}]}]},"EnforceIndex":true}`))
	fuzzseed.Add(f, "register-nested-config", byte(0), []byte(`{"Job":{"ID":"x","TaskGroups":[{"Name":"g","Count":1,"Tasks":[{"Name":"t","Driver":"raw_exec","Config":{"a":{"b":[1,{"c":null}],"d":1e308}},"Resources":{"CPU":100,"MemoryMB":64}}]}]}}`))
}

// FuzzJobDecode sends arbitrary bytes as the body of the route the first
// argument picks.
func FuzzJobDecode(f *testing.F) {
	addJobSeeds(f)
	f.Fuzz(func(t *testing.T, route byte, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		var peek struct{ Job struct{ ID string } }
		_ = json.Unmarshal(body, &peek)
		id := peek.Job.ID
		if id == "" || strings.ContainsAny(id, "/?#") {
			id = "x"
		}
		h := NewHandler(Config{RPC: admittingRPC(t), Agent: &fakeAgent{serverOK: true}, Auth: &recordingAuth{},
			ParseJob: fuzzParseJob, Logger: hclog.NewNullLogger(), Region: "global"})
		req := httptest.NewRequest(http.MethodPut, r.path(id), bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s answered %d: %s", r.name, rec.Code, truncate(rec.Body.String(), 500))
		}
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... (%d bytes)", len(s))
}
