package fsm

import (
	"fmt"

	"github.com/drover-project/drover/internal/structs"
)

func (f *FSM) applyJobRegister(buf []byte, index uint64) error {
	var req structs.JobRegisterRequest
	if err := decode(buf, &req, "job register"); err != nil {
		return err
	}
	return f.registerJob(&req, index)
}

// JobRegisterBatchResult is the FSM's answer to a JobRegisterBatchRequest
// entry: the outcome of each registration, in order (nil: applied).
type JobRegisterBatchResult struct {
	Errors []error
}

// applyJobRegisterBatch applies each registration of the entry on its own:
// one failing leaves the others applied.
func (f *FSM) applyJobRegisterBatch(buf []byte, index uint64) any {
	var req structs.JobRegisterBatchRequest
	if err := decode(buf, &req, "job register batch"); err != nil {
		return err
	}
	res := &JobRegisterBatchResult{Errors: make([]error, len(req.Jobs))}
	for i, r := range req.Jobs {
		if r == nil {
			res.Errors[i] = fmt.Errorf("fsm: job register without request")
			continue
		}
		if err := f.registerJob(r, index); err != nil {
			f.logger.Error("job register in batch failed", "index", index, "error", err)
			res.Errors[i] = err
		}
	}
	return res
}

func (f *FSM) registerJob(req *structs.JobRegisterRequest, index uint64) error {
	if req.Job == nil {
		return fmt.Errorf("fsm: job register without job")
	}
	if req.Eval != nil {
		if err := checkEvals([]*structs.Evaluation{req.Eval}); err != nil {
			return err
		}
	}
	// The server checked the namespace before the entry; a delete of it
	// may have committed since: refuse rather than orphan the job.
	ns := req.Job.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	if n, err := f.State().NamespaceByName(nil, ns); err != nil {
		return err
	} else if n == nil {
		return structs.NewErrCoded(400, "job %q is in nonexistent namespace %q", req.Job.ID, ns)
	}
	if err := f.State().UpsertJob(index, req.Submission, req.Job); err != nil {
		return err
	}
	if err := f.jobRegistered(index, req.Job); err != nil {
		return err
	}
	if req.Eval != nil {
		return f.upsertEvals(index, []*structs.Evaluation{req.Eval})
	}
	return nil
}

func (f *FSM) applyJobDeregister(buf []byte, index uint64) error {
	var req structs.JobDeregisterRequest
	if err := decode(buf, &req, "job deregister"); err != nil {
		return err
	}
	if req.Eval != nil {
		if err := checkEvals([]*structs.Evaluation{req.Eval}); err != nil {
			return err
		}
	}
	ns := req.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	st := f.State()
	if req.Purge {
		if err := st.DeleteJob(index, ns, req.JobID); err != nil {
			return err
		}
		if err := f.jobPurged(index, ns, req.JobID); err != nil {
			return err
		}
	} else {
		job, err := st.JobByID(nil, ns, req.JobID)
		if err != nil {
			return err
		}
		if job != nil && !job.Stop {
			stopped := *job // shallow: only top-level fields change
			stopped.Stop = true
			if req.SubmitTime != 0 {
				stopped.SubmitTime = req.SubmitTime
			}
			if err := st.UpsertJob(index, nil, &stopped); err != nil {
				return err
			}
			f.notifyJob(ns, req.JobID)
		}
	}
	if req.NoShutdownDelay {
		// `job stop -no-shutdown-delay`: the clients skip the shutdown_delay
		// of every allocation this stop ends, and cut it short on those an
		// earlier stop left waiting it (desired stop, still running).
		allocs, err := st.AllocsByJob(nil, ns, req.JobID, true)
		if err != nil {
			return err
		}
		yes := true
		ts := map[string]*structs.DesiredTransition{}
		for _, a := range allocs {
			if !a.ClientTerminalStatus() {
				ts[a.ID] = &structs.DesiredTransition{NoShutdownDelay: &yes}
			}
		}
		if len(ts) > 0 {
			if err := st.UpdateAllocsDesiredTransitions(index, ts, nil); err != nil {
				return err
			}
		}
	}
	if req.Eval != nil {
		return f.upsertEvals(index, []*structs.Evaluation{req.Eval})
	}
	return nil
}

func (f *FSM) applyNamespaceUpsert(buf []byte, index uint64) error {
	var req structs.NamespaceUpsertRequest
	if err := decode(buf, &req, "namespace upsert"); err != nil {
		return err
	}
	return f.State().UpsertNamespaces(index, req.Namespaces)
}

func (f *FSM) applyRootKeyUpsert(buf []byte, index uint64) error {
	var req structs.RootKeyUpsertRequest
	if err := decode(buf, &req, "root key upsert"); err != nil {
		return err
	}
	if req.Key == nil {
		return fmt.Errorf("root key upsert: no key")
	}
	return f.State().UpsertRootKey(index, f.rootKeyMeta(req.Key))
}

func (f *FSM) applyClusterMetadata(buf []byte, index uint64) error {
	var meta structs.ClusterMetadata
	if err := decode(buf, &meta, "cluster metadata"); err != nil {
		return err
	}
	return f.State().SetClusterMetadata(index, &meta)
}
