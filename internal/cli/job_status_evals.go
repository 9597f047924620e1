package cli

import (
	"fmt"
	"slices"
	"sort"

	"github.com/hashicorp/nomad/api"
)

// maxStatusFailedTGs is how many task groups job status explains; the rest
// are left to `eval status` on the evaluation named.
const maxStatusFailedTGs = 5

// jobEvalSections are the parts of job status read from the job's
// evaluations: the "Evaluations" table (with -evals) and "Placement Failure",
// the reasons the scheduler could not place allocations that are still
// waiting to be placed.
func jobEvalSections(evals []*api.Evaluation, showEvals, verbose bool) string {
	evals = newestFirst(evals)
	out := ""
	if showEvals {
		out += "\n\nEvaluations\n"
		if len(evals) == 0 {
			out += "No evaluations"
		} else {
			out += formatJobEvalList(evals, verbose)
		}
	}
	if failed := outstandingPlacementFailure(evals); failed != nil {
		out += "\n\nPlacement Failure\n" + statusFailedTGs(failed, verbose)
	}
	return out
}

// newestFirst is a copy of evals, newest first, without the nulls a server
// might send.
func newestFirst(evals []*api.Evaluation) []*api.Evaluation {
	evals = slices.DeleteFunc(slices.Clone(evals), func(e *api.Evaluation) bool { return e == nil })
	sort.SliceStable(evals, func(i, j int) bool {
		if evals[i].CreateIndex != evals[j].CreateIndex {
			return evals[i].CreateIndex > evals[j].CreateIndex
		}
		return evals[i].ID < evals[j].ID
	})
	return evals
}

// formatJobEvalList is the -evals table, newest first. A blocked evaluation
// has not finished placing, so whether it fails is not known yet.
func formatJobEvalList(evals []*api.Evaluation, verbose bool) string {
	rows := []string{"ID|Priority|Triggered By|Status|Placement Failures"}
	for _, e := range evals {
		failures := fmt.Sprintf("%t", len(e.FailedTGAllocs) > 0)
		if e.Status == api.EvalStatusBlocked {
			failures = "N/A - In Progress"
		}
		rows = append(rows, fmt.Sprintf("%s|%d|%s|%s|%s", shortID(e.ID, verbose), e.Priority, e.TriggeredBy, e.Status, failures))
	}
	return formatList(rows)
}

// outstandingPlacementFailure is the newest evaluation (evals as newestFirst
// orders them) that failed to place allocations, when those allocations are still
// unplaced: a blocked evaluation waits for capacity, or nothing was
// evaluated for the job since (an unblocked evaluation being retried).
// Cancelled evaluations do not count. Once the blocked evaluation places
// them, or the job is stopped, there is none.
func outstandingPlacementFailure(evals []*api.Evaluation) *api.Evaluation {
	blocked, newest := false, true
	var latest *api.Evaluation
	for _, e := range evals {
		if e.Status == api.EvalStatusCancelled { // superseded: its failures are no one's
			continue
		}
		blocked = blocked || e.Status == api.EvalStatusBlocked
		if latest == nil && len(e.FailedTGAllocs) > 0 {
			if newest {
				return e
			}
			latest = e
		}
		newest = false
	}
	if blocked {
		return latest
	}
	return nil
}

// statusFailedTGs is the placement failure block of an evaluation, cut to
// maxStatusFailedTGs task groups with a pointer to the full list.
func statusFailedTGs(e *api.Evaluation, verbose bool) string {
	names := sortedKeys(e.FailedTGAllocs)
	if len(names) <= maxStatusFailedTGs {
		return placementFailureBlock(e.FailedTGAllocs)
	}
	shown := make(map[string]*api.AllocationMetric, maxStatusFailedTGs)
	for _, n := range names[:maxStatusFailedTGs] {
		shown[n] = e.FailedTGAllocs[n]
	}
	return placementFailureBlock(shown) + fmt.Sprintf(
		"\n\n%d more task groups failed to place; to see them all run:\n%s eval status %s",
		len(names)-maxStatusFailedTGs, BinaryName, shortID(e.ID, verbose))
}
