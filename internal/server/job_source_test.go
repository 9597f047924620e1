package server

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// A job's source is kept with each version only up to job_max_source_size
// (Nomad's default 1M): a larger one is dropped and the job is
// registered all the same.
func TestJobSourceOverLimitIsNotStored(t *testing.T) {
	s := testServer(t, nil)
	small := testServer(t, func(c *Config) { c.JobMaxSourceSize = 1000 })
	for _, c := range []struct {
		srv    *Server
		id     string
		size   int
		stored bool
	}{
		{s, "small", 100, true},
		{s, "large", DefaultJobMaxSourceSize + 1, false},
		{small, "configured", 2000, false},
	} {
		s := c.srv
		sub := &structs.JobSubmission{Source: `job "` + c.id + `" {}` + strings.Repeat("#", c.size), Format: "hcl2"}
		var reply structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob(c.id, 1), Submission: sub}, &reply); err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		var got structs.JobSubmissionResponse
		err := s.RPC("Job.GetJobSubmission", &structs.JobSubmissionRequest{JobID: c.id, QueryOptions: structs.QueryOptions{Namespace: structs.DefaultNamespace}}, &got)
		if stored := err == nil && got.Submission != nil; stored != c.stored {
			t.Fatalf("%s: source stored = %v (%v), want %v", c.id, stored, err, c.stored)
		}
		if j, _ := s.State().JobByID(nil, structs.DefaultNamespace, c.id); j == nil {
			t.Fatalf("%s: job not registered", c.id)
		}
	}
}
