package coregc

import "github.com/drover-project/drover/internal/structs"

// MaxIDsPerEntry bounds the IDs one GC entry carries (evaluations and
// allocations together): about 300 KB of entry, and a state write short
// enough (a few milliseconds for the 4,096 allocations) that the FSM keeps
// applying other entries between the batches of a large collection.
const MaxIDsPerEntry = 4096

// Entry is one Raft entry of a collection.
type Entry struct {
	Type structs.MessageType
	Req  any
}

// Entries splits r into Raft entries of at most maxIDs IDs (0 takes
// MaxIDsPerEntry), in the order they must commit: allocations, then their
// evaluations, then the jobs those belonged to, then deployments and nodes.
// A collection cut short between two entries leaves nothing inconsistent:
// the next one finds what is left.
func Entries(r *Result, maxIDs int) []Entry {
	if maxIDs <= 0 {
		maxIDs = MaxIDsPerEntry
	}
	var out []Entry
	// Allocations first, then evaluations, packed together.
	ids := make([]string, 0, len(r.Allocs)+len(r.Evals))
	ids = append(ids, r.Allocs...)
	nAllocs := len(ids)
	ids = append(ids, r.Evals...)
	for start := 0; start < len(ids); start += maxIDs {
		end := min(start+maxIDs, len(ids))
		req := &structs.EvalDeleteRequest{}
		if start < nAllocs {
			req.Allocs = ids[start:min(end, nAllocs)]
		}
		if end > nAllocs {
			req.Evals = ids[max(start, nAllocs):end]
		}
		out = append(out, Entry{structs.EvalDeleteRequestType, req})
	}
	for start := 0; start < len(r.Jobs); start += maxIDs {
		out = append(out, Entry{structs.JobBatchDeregisterRequestType,
			&structs.JobBatchDeregisterRequest{Jobs: r.Jobs[start:min(start+maxIDs, len(r.Jobs))]}})
	}
	for start := 0; start < len(r.Deployments); start += maxIDs {
		out = append(out, Entry{structs.DeploymentDeleteRequestType,
			&structs.DeploymentDeleteRequest{Deployments: r.Deployments[start:min(start+maxIDs, len(r.Deployments))]}})
	}
	for start := 0; start < len(r.Nodes); start += maxIDs {
		out = append(out, Entry{structs.NodeBatchDeregisterRequestType,
			&structs.NodeBatchDeregisterRequest{NodeIDs: r.Nodes[start:min(start+maxIDs, len(r.Nodes))]}})
	}
	return out
}
