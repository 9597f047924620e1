package server

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Deployment serves deployments: the reads here, the operator's actions in
// endpoint_deployment_ops.go. The deployment watcher moves deployments
// through the same Raft entries, not through these endpoints.
type Deployment struct{ srv *Server }

// List returns deployments.
func (d *Deployment) List(args *structs.GenericRequest, reply *structs.DeploymentListResponse) error {
	if done, err := d.srv.forward("Deployment.List", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	readable, err := d.srv.listNamespaces(&args.QueryOptions)
	if err != nil {
		return err
	}
	return d.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		iter, err := st.DeploymentsByIDPrefix(ws, ns, args.Prefix)
		if err != nil {
			return err
		}
		out := []*structs.Deployment{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			out = append(out, raw.(*structs.Deployment))
		}
		out = onlyReadable(out, readable, func(d *structs.Deployment) string { return d.Namespace })
		reply.Deployments, reply.NextToken, err = paginate(out, &args.QueryOptions, func(d *structs.Deployment) string { return d.ID }, keep[*structs.Deployment](filter))
		if err != nil {
			return err
		}
		reply.Index = maxIndex(st, "deployment")
		return nil
	})
}

// GetDeployment returns one deployment.
func (d *Deployment) GetDeployment(args *structs.DeploymentSpecificRequest, reply *structs.SingleDeploymentResponse) error {
	if done, err := d.srv.forward("Deployment.GetDeployment", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return d.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		dep, err := st.DeploymentByID(ws, args.DeploymentID)
		if err != nil {
			return err
		}
		reply.Deployment = dep
		reply.Index = maxIndex(st, "deployment")
		return nil
	})
}

// Allocations lists a deployment's allocations.
func (d *Deployment) Allocations(args *structs.DeploymentSpecificRequest, reply *structs.AllocListResponse) error {
	if done, err := d.srv.forward("Deployment.Allocations", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return d.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		// A deployment's allocations are its job's: read those, not
		// every allocation of the cluster.
		dep, err := st.DeploymentByID(ws, args.DeploymentID)
		if err != nil {
			return err
		}
		out := []*structs.AllocListStub{}
		if dep != nil {
			allocs, err := st.AllocsByJob(ws, dep.Namespace, dep.JobID, true)
			if err != nil {
				return err
			}
			for _, a := range allocs {
				if a.DeploymentID == args.DeploymentID {
					out = append(out, a.Stub())
				}
			}
		}
		reply.Allocations = out
		reply.Index = maxIndex(st, "allocs")
		return nil
	})
}
