package state

import (
	"fmt"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// DeploymentByID returns a deployment, or nil.
func (s *reader) DeploymentByID(ws memdb.WatchSet, id string) (*structs.Deployment, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableDeployment, "id", id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Deployment), nil
}

// Deployments iterates every deployment.
func (s *reader) Deployments(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableDeployment, "id")
}

// DeploymentsByIDPrefix iterates deployments whose ID starts with prefix in
// namespace ("*" = all namespaces).
func (s *reader) DeploymentsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return prefixIter(txn, ws, tableDeployment, namespace, prefix)
}

// DeploymentsByJobID returns a job's deployments. Unless all is set, only
// deployments of the job's current incarnation are returned.
func (s *reader) DeploymentsByJobID(ws memdb.WatchSet, namespace, jobID string, all bool) ([]*structs.Deployment, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	return deploymentsByJob(txn, ws, namespace, jobID, all)
}

func deploymentsByJob(txn *memdb.Txn, ws memdb.WatchSet, namespace, jobID string, all bool) ([]*structs.Deployment, error) {
	var job *structs.Job
	if !all {
		raw, err := first(txn, ws, tableJobs, "id", namespace, jobID)
		if err != nil {
			return nil, err
		}
		if raw != nil {
			job = raw.(*structs.Job)
		}
	}
	iter, err := get(txn, ws, tableDeployment, "job", namespace, jobID)
	if err != nil {
		return nil, err
	}
	var out []*structs.Deployment
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		d := raw.(*structs.Deployment)
		if job != nil && d.JobCreateIndex != job.CreateIndex {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// LatestDeploymentByJobID returns the most recently created deployment of
// the job's current incarnation, or nil.
func (s *reader) LatestDeploymentByJobID(ws memdb.WatchSet, namespace, jobID string) (*structs.Deployment, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	all, err := deploymentsByJob(txn, ws, namespace, jobID, false)
	if err != nil {
		return nil, err
	}
	var latest *structs.Deployment
	for _, d := range all {
		if latest == nil || d.CreateIndex > latest.CreateIndex {
			latest = d
		}
	}
	return latest, nil
}

// UpsertDeployment inserts or replaces a deployment.
func (s *StateStore) UpsertDeployment(index uint64, d *structs.Deployment) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	if err := upsertDeploymentTxn(txn, index, d); err != nil {
		return err
	}
	if err := refreshJobStatus(txn, index, d.Namespace, d.JobID, false); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

func upsertDeploymentTxn(txn *memdb.Txn, index uint64, in *structs.Deployment) error {
	if in == nil || in.ID == "" {
		return fmt.Errorf("state: upsert deployment: missing deployment or ID")
	}
	d := copyDeployment(in)
	if d.Namespace == "" {
		d.Namespace = structs.DefaultNamespace
	}
	raw, err := txn.First(tableDeployment, "id", d.ID)
	if err != nil {
		return fmt.Errorf("state: deployment lookup: %w", err)
	}
	if raw != nil {
		d.CreateIndex = raw.(*structs.Deployment).CreateIndex
	} else {
		d.CreateIndex = index
	}
	d.ModifyIndex = index
	if err := txn.Insert(tableDeployment, d); err != nil {
		return fmt.Errorf("state: deployment insert: %w", err)
	}
	return bumpIndex(txn, index, tableDeployment)
}

// applyDeploymentUpdate sets a deployment's status. Unknown IDs are ignored.
func applyDeploymentUpdate(txn *memdb.Txn, index uint64, u *structs.DeploymentStatusUpdate, jobs jobKeys) error {
	raw, err := txn.First(tableDeployment, "id", u.DeploymentID)
	if err != nil {
		return fmt.Errorf("state: deployment lookup: %w", err)
	}
	if raw == nil {
		return nil
	}
	d := copyDeployment(raw.(*structs.Deployment))
	d.Status = u.Status
	d.StatusDescription = u.StatusDescription
	d.ModifyIndex = index
	if err := txn.Insert(tableDeployment, d); err != nil {
		return fmt.Errorf("state: deployment insert: %w", err)
	}
	jobs.add(d.Namespace, d.JobID)
	return bumpIndex(txn, index, tableDeployment)
}

// deploymentAllocTransition keeps a deployment's per-group counters in step
// with its allocations: PlacedAllocs counts allocations new to the
// deployment (placed, or updated in place into it), and PlacedCanaries
// records its canaries; the first health
// a client reports counts as healthy or unhealthy, and a healthy allocation
// moves RequireProgressBy to its health timestamp (unix nanoseconds) plus the
// group's ProgressDeadline (nanoseconds).
func deploymentAllocTransition(txn *memdb.Txn, index uint64, ex, a *structs.Allocation) error {
	if a.DeploymentID == "" {
		return nil
	}
	placed := ex == nil || ex.DeploymentID != a.DeploymentID
	hadHealth := !placed && ex.DeploymentStatus != nil && ex.DeploymentStatus.Healthy != nil
	hasHealth := a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil
	newHealth := hasHealth && !hadHealth
	if !placed && !newHealth {
		return nil
	}
	raw, err := txn.First(tableDeployment, "id", a.DeploymentID)
	if err != nil {
		return fmt.Errorf("state: deployment lookup: %w", err)
	}
	if raw == nil {
		return nil
	}
	d := copyDeployment(raw.(*structs.Deployment))
	st := d.TaskGroups[a.TaskGroup]
	if st == nil {
		return nil
	}
	if placed {
		st.PlacedAllocs++
		if a.DeploymentStatus != nil && a.DeploymentStatus.Canary && !slices.Contains(st.PlacedCanaries, a.ID) {
			st.PlacedCanaries = append(st.PlacedCanaries, a.ID)
		}
	}
	if newHealth {
		if *a.DeploymentStatus.Healthy {
			st.HealthyAllocs++
			if st.ProgressDeadline > 0 && !a.DeploymentStatus.Timestamp.IsZero() {
				st.RequireProgressBy = a.DeploymentStatus.Timestamp.Add(st.ProgressDeadline)
			}
		} else {
			st.UnhealthyAllocs++
		}
	}
	d.ModifyIndex = index
	if err := txn.Insert(tableDeployment, d); err != nil {
		return fmt.Errorf("state: deployment insert: %w", err)
	}
	return bumpIndex(txn, index, tableDeployment)
}

// copyDeployment copies a deployment deeply enough to modify its groups.
func copyDeployment(d *structs.Deployment) *structs.Deployment {
	c := *d
	if d.TaskGroups != nil {
		c.TaskGroups = make(map[string]*structs.DeploymentState, len(d.TaskGroups))
		for k, v := range d.TaskGroups {
			if v == nil {
				c.TaskGroups[k] = nil
				continue
			}
			s := *v
			s.PlacedCanaries = append([]string(nil), v.PlacedCanaries...)
			c.TaskGroups[k] = &s
		}
	}
	return &c
}
