package server

import "github.com/drover-project/drover/internal/structs"

// AdmitJob is what every job submitted for registration or planning passes
// before anything is proposed to Raft: it canonicalizes the job in place
// and validates it, answering a 400 for a job that must not be stored.
// Exported so the HTTP fuzz target runs the very checks Job.Register runs.
func AdmitJob(job *structs.Job) error { return admitJob(job) }
