package server

import "github.com/drover-project/drover/internal/structs"

// AdmitJob is what every job submitted for registration or planning passes
// before anything is proposed to Raft, on a server with the default
// limits: it canonicalizes the job in place and validates it, answering a
// 400 for a job that must not be stored and the warnings for blocks Drover
// does not act on yet. Exported so the HTTP fuzz target runs the very
// checks Job.Register runs.
func AdmitJob(job *structs.Job) (warnings string, err error) {
	if warnings, err = admitJob(job); err != nil {
		return "", err
	}
	s := &Server{config: &Config{JobMaxCount: DefaultJobMaxCount}}
	return warnings, s.checkJobLimits(job)
}

// ValidateJob answers what Job.Validate answers for job on a server with
// the default limits (for the HTTP fuzz target).
func ValidateJob(job *structs.Job, reply *structs.JobValidateResponse) {
	validateJob(job, DefaultJobMaxCount, reply)
}
