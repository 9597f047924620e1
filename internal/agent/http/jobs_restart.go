package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// JobRestartBody is the body of PUT /v1/job/<id>/restart. BatchSize is a
// count (1) or a percentage ("25%"); BatchWait a duration ("10s" or
// nanoseconds) or "ask" (pause after each batch until resumed).
type JobRestartBody struct {
	BatchSize  json.RawMessage
	BatchWait  json.RawMessage
	Group      string
	Task       string
	AllTasks   bool
	Reschedule bool
	OnError    string
}

// /v1/job/<id>/restart[/resume]: start (PUT/POST), read (GET), cancel
// (DELETE) a rolling restart, or resume a paused one.
func (s *server) jobRestart(w http.ResponseWriter, r *http.Request, id string, rest []string) (any, error) {
	if len(rest) == 1 && rest[0] == "resume" {
		if !isWrite(r.Method) {
			return nil, errInvalidMethod
		}
		return s.jobRestartControl(w, r, id, true)
	}
	if len(rest) != 0 {
		return nil, errNotFound
	}
	switch {
	case r.Method == http.MethodGet:
		args := structs.JobRestartSpecificRequest{JobID: id}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.JobRestartResponse
		if err := s.cfg.RPC.RPC("Job.GetRestart", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		if reply.Restart == nil {
			return nil, structs.NewErrCoded(404, "job %q has no restart", id)
		}
		return reply.Restart, nil
	case r.Method == http.MethodDelete:
		return s.jobRestartControl(w, r, id, false)
	case isWrite(r.Method):
	default:
		return nil, errInvalidMethod
	}
	var body JobRestartBody
	if err := decodeBody(r, &body, true); err != nil {
		return nil, err
	}
	spec, err := body.spec()
	if err != nil {
		return nil, err
	}
	args := structs.JobRestartStartRequest{JobID: id, Spec: spec}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.JobRestartResponse
	if err := s.cfg.RPC.RPC("Job.Restart", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply.Restart, nil
}

func (s *server) jobRestartControl(w http.ResponseWriter, r *http.Request, id string, resume bool) (any, error) {
	args := structs.JobRestartControlRequest{JobID: id, Resume: resume}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.JobRestartResponse
	if err := s.cfg.RPC.RPC("Job.RestartControl", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply.Restart, nil
}

// spec turns the body into a restart spec; bad values are 400s naming the
// field.
func (b *JobRestartBody) spec() (structs.JobRestartSpec, error) {
	spec := structs.JobRestartSpec{Group: b.Group, Task: b.Task, AllTasks: b.AllTasks, Reschedule: b.Reschedule, OnError: b.OnError}
	if len(b.BatchSize) > 0 && string(b.BatchSize) != "null" {
		n, pct, err := structs.ParseBatchSize(rawString(b.BatchSize))
		if err != nil {
			return spec, structs.NewErrCoded(400, "BatchSize: %v", err)
		}
		spec.BatchSize, spec.BatchSizePercent = n, pct
	}
	if len(b.BatchWait) > 0 && string(b.BatchWait) != "null" {
		v := rawString(b.BatchWait)
		switch {
		case v == "ask":
			spec.BatchWaitAsk = true
		default:
			d, err := parseDurationOrNanos(v)
			if err != nil || d < 0 {
				return spec, structs.NewErrCoded(400, "BatchWait: %q is not a duration (\"10s\") or \"ask\"", v)
			}
			spec.BatchWait = d
		}
	}
	if err := spec.Validate(); err != nil {
		return spec, structs.NewErrCoded(400, "%s", err.Error())
	}
	return spec, nil
}

// rawString is a JSON string's value, or the raw text of a number.
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

func parseDurationOrNanos(v string) (time.Duration, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(n), nil
	}
	return time.ParseDuration(v)
}
