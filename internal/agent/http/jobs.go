package httpapi

import (
	"net/http"

	"strconv"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/apiconv"
	"github.com/drover-project/drover/internal/structs"
)

// /v1/jobs: GET lists job stubs, PUT/POST registers.
func (s *server) jobsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	switch {
	case r.Method == http.MethodGet:
		args := structs.JobListRequest{}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		meta, err := boolParam(r, "meta", false)
		if err != nil {
			return nil, err
		}
		args.IncludeMeta = meta
		var reply structs.JobListResponse
		if err := s.cfg.RPC.RPC("Job.List", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		return nonNil(reply.Jobs), nil
	case isWrite(r.Method):
		return s.jobRegister(w, r, "")
	}
	return nil, errInvalidMethod
}

// /v1/jobs/parse: HCL to api.Job JSON with the injected parser.
func (s *server) jobsParseRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	if s.cfg.ParseJob == nil {
		return nil, structs.NewErrCoded(http.StatusNotImplemented, "job parsing is not available on this agent")
	}
	var args api.JobsParseRequest
	if err := decodeBody(r, &args, false); err != nil {
		return nil, err
	}
	if args.JobHCL == "" {
		return nil, structs.NewErrCoded(400, "Job spec is empty")
	}
	if err := checkJobspecSize(args.JobHCL, args.Variables); err != nil {
		return nil, err
	}
	job, err := s.cfg.ParseJob(args.JobHCL, args.Variables, args.Canonicalize)
	if err != nil {
		return nil, structs.NewErrCoded(400, "%v", err)
	}
	return job, nil
}

// /v1/validate/job: validate without registering.
func (s *server) validateJobRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var body api.JobValidateRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, structs.NewErrCoded(400, "Job must be specified")
	}
	args := structs.JobValidateRequest{}
	s.parseWrite(r, &args.WriteRequest)
	if err := nullElement(body.Job, "Job"); err != nil {
		return nil, err
	}
	s.defaultJobPlacement(body.Job, &args.WriteRequest)
	args.Job = apiconv.ApiJobToStructJob(body.Job)
	var reply structs.JobValidateResponse
	if err := s.cfg.RPC.RPC("Job.Validate", &args, &reply); err != nil {
		return nil, err
	}
	reply.ValidationErrors = nonNil(reply.ValidationErrors)
	return &reply, nil
}

// /v1/job/<id>[/<sub>]
func (s *server) jobSpecificRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/job/")
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "Missing job ID")
	}
	id := parts[0]
	if len(parts) == 1 {
		switch {
		case r.Method == http.MethodGet:
			return s.jobGet(w, r, id)
		case isWrite(r.Method):
			return s.jobRegister(w, r, id)
		case r.Method == http.MethodDelete:
			return s.jobDeregister(w, r, id)
		}
		return nil, errInvalidMethod
	}
	if len(parts) == 4 && parts[1] == "versions" && parts[3] == "tag" {
		return s.jobTagVersion(w, r, id, parts[2])
	}
	if out, handled, err := s.jobPeriodicOrDispatch(w, r, id, parts[1:]); handled {
		return out, err
	}
	if parts[1] == "restart" {
		return s.jobRestart(w, r, id, parts[2:])
	}
	if len(parts) != 2 {
		return nil, errNotFound
	}
	switch parts[1] {
	case "allocations":
		var reply structs.JobAllocationsResponse
		return s.jobQuery(w, r, id, "Job.Allocations", &reply, &reply.QueryMeta, func() any {
			return nonNil(reply.Allocations)
		})
	case "evaluations":
		var reply structs.JobEvaluationsResponse
		return s.jobQuery(w, r, id, "Job.Evaluations", &reply, &reply.QueryMeta, func() any {
			return nonNil(reply.Evaluations)
		})
	case "deployments":
		var reply structs.DeploymentListResponse
		return s.jobQuery(w, r, id, "Job.Deployments", &reply, &reply.QueryMeta, func() any {
			return deploymentsOut(reply.Deployments)
		})
	case "deployment":
		var reply structs.SingleDeploymentResponse
		return s.jobQuery(w, r, id, "Job.LatestDeployment", &reply, &reply.QueryMeta, func() any {
			return reply.Deployment
		})
	case "summary":
		return s.jobSummary(w, r, id)
	case "versions":
		return s.jobVersions(w, r, id)
	case "plan":
		return s.jobPlan(w, r, id)
	case "evaluate":
		return s.jobEvaluate(w, r, id)
	case "revert":
		return s.jobRevert(w, r, id)
	case "stable":
		return s.jobStable(w, r, id)
	case "scale":
		if isWrite(r.Method) {
			return s.jobScale(w, r, id)
		}
		var reply structs.JobScaleStatusResponse
		return s.jobQuery(w, r, id, "Job.ScaleStatus", &reply, &reply.QueryMeta, func() any {
			return reply.JobScaleStatus
		})
	case "submission":
		return s.jobSubmission(w, r, id)
	case "services":
		var reply structs.ServiceRegistrationByNameResponse
		return s.jobQuery(w, r, id, "ServiceRegistration.ByJob", &reply, &reply.QueryMeta, func() any {
			return nonNil(reply.Services)
		})
	case "promote":
		return s.jobPromote(w, r, id)
	}
	return nil, errNotFound
}

// /v1/job/<id>/submission?version=N: the source a version was submitted with.
func (s *server) jobSubmission(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.JobSubmissionRequest{JobID: id}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	v := r.URL.Query().Get("version")
	if v == "" {
		return nil, structs.NewErrCoded(400, "Missing version parameter")
	}
	version, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return nil, structs.NewErrCoded(400, "Invalid version parameter %q: must be a non-negative integer", v)
	}
	args.Version = version
	var reply structs.JobSubmissionResponse
	if err := s.cfg.RPC.RPC("Job.GetJobSubmission", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	sub := reply.Submission
	return &api.JobSubmission{Source: sub.Source, Format: sub.Format, VariableFlags: sub.VariableFlags, Variables: sub.Variables}, nil
}

// jobQuery runs a GET on a JobSpecificRequest RPC; shape picks the answer
// out of reply once it is filled.
func (s *server) jobQuery(w http.ResponseWriter, r *http.Request, id, method string, reply any, meta *structs.QueryMeta, shape func() any) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.JobSpecificRequest{JobID: id}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	all, err := boolParam(r, "all", false)
	if err != nil {
		return nil, err
	}
	args.All = all
	if err := s.cfg.RPC.RPC(method, &args, reply); err != nil {
		return nil, err
	}
	setMeta(w, meta)
	return shape(), nil
}

func (s *server) jobGet(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	args := structs.JobSpecificRequest{JobID: id}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.SingleJobResponse
	if err := s.cfg.RPC.RPC("Job.GetJob", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	if reply.Job == nil {
		return nil, structs.ErrUnknownJob
	}
	return reply.Job, nil
}

func (s *server) jobSummary(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.JobSpecificRequest{JobID: id}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.JobSummaryResponse
	if err := s.cfg.RPC.RPC("Job.Summary", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	if reply.JobSummary == nil {
		return nil, structs.ErrUnknownJob
	}
	return reply.JobSummary, nil
}

func (s *server) jobVersions(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.JobVersionsRequest{JobID: id}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	diffs, err := boolParam(r, "diffs", false)
	if err != nil {
		return nil, err
	}
	args.Diffs = diffs
	args.DiffTagName = r.URL.Query().Get("diff_tag")
	if v := r.URL.Query().Get("diff_version"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, structs.NewErrCoded(400, "Invalid diff_version parameter %q: must be a non-negative integer", v)
		}
		args.DiffVersion = &n
	}
	var reply structs.JobVersionsResponse
	if err := s.cfg.RPC.RPC("Job.GetJobVersions", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	if len(reply.Versions) == 0 {
		return nil, structs.NewErrCoded(404, "job versions not found")
	}
	if diffs || args.DiffVersion != nil || args.DiffTagName != "" {
		reply.Diffs = nonNil(reply.Diffs)
	}
	return &reply, nil
}

// jobRegister serves PUT/POST /v1/jobs and /v1/job/<id> (pathID != "").
func (s *server) jobRegister(w http.ResponseWriter, r *http.Request, pathID string) (any, error) {
	var body api.JobRegisterRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, structs.NewErrCoded(400, "Job must be specified")
	}
	if body.Job.ID == nil || *body.Job.ID == "" {
		return nil, structs.NewErrCoded(400, "Job ID hasn't been provided")
	}
	if pathID != "" && *body.Job.ID != pathID {
		return nil, structs.NewErrCoded(400, "Job ID does not match name")
	}
	args := structs.JobRegisterRequest{
		EnforceIndex:      body.EnforceIndex,
		JobModifyIndex:    body.JobModifyIndex,
		PreserveCounts:    body.PreserveCounts,
		PreserveResources: body.PreserveResources,
		PolicyOverride:    body.PolicyOverride,
		EvalPriority:      body.EvalPriority,
	}
	s.parseWrite(r, &args.WriteRequest)
	if err := nullElement(body.Job, "Job"); err != nil {
		return nil, err
	}
	s.defaultJobPlacement(body.Job, &args.WriteRequest)
	args.Job = apiconv.ApiJobToStructJob(body.Job)
	if sub := body.Submission; sub != nil {
		args.Submission = &structs.JobSubmission{
			Source:        sub.Source,
			Format:        sub.Format,
			VariableFlags: sub.VariableFlags,
			Variables:     sub.Variables,
			Namespace:     args.Job.Namespace,
			JobID:         args.Job.ID,
		}
	}
	var reply structs.JobRegisterResponse
	if err := s.cfg.RPC.RPC("Job.Register", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &reply, nil
}

// defaultJobPlacement gives a job without namespace or region the request's,
// and makes the write go to the job's namespace and region. A job left in
// the default region "global" runs in the region the request targets.
func (s *server) defaultJobPlacement(job *api.Job, wr *structs.WriteRequest) {
	if job.Namespace == nil || *job.Namespace == "" {
		job.Namespace = new(wr.Namespace)
	}
	if job.Region == nil || *job.Region == "" || *job.Region == api.GlobalRegion {
		job.Region = new(wr.Region)
	}
	wr.Namespace = *job.Namespace
	wr.Region = *job.Region
}

func (s *server) jobDeregister(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	args := structs.JobDeregisterRequest{JobID: id}
	s.parseWrite(r, &args.WriteRequest)
	var err error
	if args.Purge, err = boolParam(r, "purge", false); err != nil {
		return nil, err
	}
	if args.Global, err = boolParam(r, "global", false); err != nil {
		return nil, err
	}
	if args.NoShutdownDelay, err = boolParam(r, "no_shutdown_delay", false); err != nil {
		return nil, err
	}
	prio, err := intParam(r, "eval_priority", 0)
	if err != nil {
		return nil, err
	}
	if prio != 0 && (prio < 1 || prio > structs.JobMaxPriority) {
		return nil, structs.NewErrCoded(400, "Eval priority must be between 1 and %d", structs.JobMaxPriority)
	}
	args.EvalPriority = int(prio)
	var reply structs.JobDeregisterResponse
	if err := s.cfg.RPC.RPC("Job.Deregister", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &reply, nil
}

func (s *server) jobPlan(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	// Explain and ExplainAll may also come in the body: the api client
	// cannot add query parameters to a write.
	var body struct {
		api.JobPlanRequest
		Explain, ExplainAll bool
	}
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, structs.NewErrCoded(400, "Job must be specified")
	}
	if body.Job.ID == nil || *body.Job.ID != id {
		return nil, structs.NewErrCoded(400, "Job ID does not match")
	}
	args := structs.JobPlanRequest{Diff: body.Diff, PolicyOverride: body.PolicyOverride}
	// Drover's ?explain=true adds an Explain field; verbose=true keeps
	// every ranked node rather than the top 20.
	var err error
	if args.Explain, err = boolParam(r, "explain", body.Explain); err != nil {
		return nil, err
	}
	if args.ExplainAll, err = boolParam(r, "verbose", body.ExplainAll); err != nil {
		return nil, err
	}
	s.parseWrite(r, &args.WriteRequest)
	if err := nullElement(body.Job, "Job"); err != nil {
		return nil, err
	}
	s.defaultJobPlacement(body.Job, &args.WriteRequest)
	args.Job = apiconv.ApiJobToStructJob(body.Job)
	var reply structs.JobPlanResponse
	if err := s.cfg.RPC.RPC("Job.Plan", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	reply.CreatedEvals = nonNil(reply.CreatedEvals)
	return &reply, nil
}

func (s *server) jobEvaluate(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var body api.JobEvaluateRequest
	if err := decodeBody(r, &body, true); err != nil {
		return nil, err
	}
	args := structs.JobEvaluateRequest{
		JobID:       id,
		EvalOptions: structs.EvalOptions{ForceReschedule: body.EvalOptions.ForceReschedule},
	}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.JobRegisterResponse
	if err := s.cfg.RPC.RPC("Job.Evaluate", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &reply, nil
}
