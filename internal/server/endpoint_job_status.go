package server

import (
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// ScaleStatus reports each group's desired and actual counts.
func (j *Job) ScaleStatus(args *structs.JobSpecificRequest, reply *structs.JobScaleStatusResponse) error {
	if done, err := j.srv.forward("Job.ScaleStatus", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		job, err := st.JobByID(ws, ns, args.JobID)
		if err != nil {
			return err
		}
		if job == nil {
			reply.JobScaleStatus = nil
			reply.Index = maxIndex(st, "jobs")
			return structs.NewErrCoded(404, "job not found")
		}
		allocs, err := st.AllocsByJob(ws, ns, job.ID, false)
		if err != nil {
			return err
		}
		events, err := st.ScalingEventsByJob(ws, ns, job.ID)
		if err != nil {
			return err
		}
		out := &api.JobScaleStatusResponse{JobID: job.ID, Namespace: job.Namespace, JobCreateIndex: job.CreateIndex,
			JobModifyIndex: job.ModifyIndex, JobStopped: job.Stop, TaskGroups: map[string]api.TaskGroupScaleStatus{}}
		for _, tg := range job.TaskGroups {
			s := api.TaskGroupScaleStatus{Desired: tg.Count, Events: []api.ScalingEvent{}}
			if events != nil {
				for _, e := range events.ScalingEvents[tg.Name] {
					s.Events = append(s.Events, *e)
				}
			}
			for _, a := range allocs {
				if a.TaskGroup != tg.Name || a.TerminalStatus() || a.Job == nil || a.Job.Version != job.Version {
					continue
				}
				s.Placed++
				if a.ClientStatus == structs.AllocClientStatusRunning {
					s.Running++
				}
				if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
					if *a.DeploymentStatus.Healthy {
						s.Healthy++
					} else {
						s.Unhealthy++
					}
				}
			}
			out.TaskGroups[tg.Name] = s
		}
		reply.JobScaleStatus = out
		reply.Index = job.ModifyIndex
		if idx := maxIndex(st, "allocs", "scaling_event"); idx > reply.Index {
			reply.Index = idx
		}
		return nil
	})
}

// GetJobSubmission returns the source a job version was submitted with.
func (j *Job) GetJobSubmission(args *structs.JobSubmissionRequest, reply *structs.JobSubmissionResponse) error {
	if done, err := j.srv.forward("Job.GetJobSubmission", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		sub, err := st.JobSubmission(ws, ns, args.JobID, args.Version)
		if err != nil {
			return err
		}
		reply.Submission = sub
		reply.Index = maxIndex(st, "job_submission", "jobs")
		if sub == nil {
			return structs.NewErrCoded(404, "job source not found")
		}
		return nil
	})
}

// Evaluate creates node-update evaluations for every job on a node.
func (n *Node) Evaluate(args *structs.NodeSpecificRequest, reply *structs.NodeUpdateResponse) error {
	if done, err := n.srv.forward("Node.Evaluate", args.Region, false, args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, (*acl.ACL).AllowNodeWrite); err != nil {
		return err
	}
	node, err := n.srv.State().NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return structs.NewErrCoded(404, "node not found")
	}
	ids, idx, err := n.srv.createNodeEvals(node.ID, node.ModifyIndex)
	if err != nil {
		return err
	}
	reply.EvalIDs, reply.EvalCreateIndex, reply.Index = ids, idx, idx
	reply.NodeModifyIndex = node.ModifyIndex
	return nil
}
