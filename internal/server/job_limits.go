package server

import (
	"fmt"

	"github.com/drover-project/drover/internal/structs"
)

// DefaultJobMaxCount is server.job_max_count's default: the most
// allocations one job may ask for, as the sum of its groups' counts
// (Nomad's default).
const DefaultJobMaxCount = 50000

// jobCountErrors lists what is wrong with job's group counts under the
// limit (negative: no limit): a group over the limit is named, and a job
// whose groups are each within it but together are not is named as a
// whole. The counts of system and sysbatch jobs are 0 or 1 (Validate
// checks that) and not summed: they run once per node.
func jobCountErrors(job *structs.Job, limit int) []string {
	if limit < 0 || job == nil || job.Type == structs.JobTypeSystem || job.Type == structs.JobTypeSysBatch {
		return nil
	}
	var errs []string
	total := 0
	for _, tg := range job.TaskGroups {
		if tg == nil || tg.Count <= 0 {
			continue
		}
		if tg.Count > limit {
			errs = append(errs, fmt.Sprintf("Task group %q: count %d exceeds the server's job_max_count (%d)", tg.Name, tg.Count, limit))
		}
		// Canaries are placed beside the group's allocations: bounded alike.
		if u := tg.Update; u != nil && u.Canary != nil && *u.Canary > limit {
			errs = append(errs, fmt.Sprintf("Task group %q: update.canary %d exceeds the server's job_max_count (%d)", tg.Name, *u.Canary, limit))
		}
		total += min(tg.Count, limit+1) // groups x (limit+1): cannot overflow
	}
	if len(errs) == 0 && total > limit {
		errs = append(errs, fmt.Sprintf("Job %q: the sum of its group counts (%d) exceeds the server's job_max_count (%d)", job.ID, total, limit))
	}
	return errs
}

// checkJobLimits refuses a job that asks for more than the server's limits
// allow, with a 400 naming the group and the limit.
func (s *Server) checkJobLimits(job *structs.Job) error {
	errs := jobCountErrors(job, s.config.JobMaxCount)
	if len(errs) == 0 {
		return nil
	}
	return structs.NewErrCoded(400, "Job validation failed: %s", (&structs.ValidationError{Errors: errs}).Error())
}
