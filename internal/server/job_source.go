package server

import "github.com/drover-project/drover/internal/structs"

// DefaultJobMaxSourceSize bounds the jobspec source (and variables) kept
// with each job version, as Nomad's job_max_source_size does with its
// default "1M": past it the source is not stored and the job is registered
// all the same. The job itself is bounded by the HTTP API's body limit;
// without this each tracked version could also keep megabytes of source.
const DefaultJobMaxSourceSize = 1_000_000

// boundSubmission returns sub, or nil when its source is too large to keep.
func (s *Server) boundSubmission(sub *structs.JobSubmission, job *structs.Job) *structs.JobSubmission {
	if sub == nil {
		return nil
	}
	n := len(sub.Source) + len(sub.Variables)
	for k, v := range sub.VariableFlags {
		n += len(k) + len(v)
	}
	limit := s.config.JobMaxSourceSize
	if limit <= 0 {
		limit = DefaultJobMaxSourceSize
	}
	if int64(n) <= limit {
		return sub
	}
	s.logger.Warn("job source not stored: larger than server.job_max_source_size", "job", job.ID, "namespace", job.Namespace, "bytes", n, "limit", limit)
	return nil
}
