package state

import (
	"fmt"
	"slices"
	"sort"
	"time"

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
	if d.Status == structs.DeploymentStatusSuccessful {
		if err := markDeploymentStable(txn, index, d); err != nil {
			return err
		}
	}
	return bumpIndex(txn, index, tableDeployment)
}

// applyDeploymentUpdate sets a deployment's status; a deployment that
// becomes successful marks its job version stable. Unknown IDs are ignored.
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
	if d.Status == structs.DeploymentStatusSuccessful {
		if err := markDeploymentStable(txn, index, d); err != nil {
			return err
		}
	}
	return bumpIndex(txn, index, tableDeployment)
}

// deployment keeps a deployment's per-group counters in step
// with its allocations, as Nomad does: an allocation new to the deployment
// (placed, or updated in place into it) counts as placed (a canary is
// recorded in PlacedCanaries), and the first
// placement of a group starts its progress deadline (the allocation's
// ModifyTime plus ProgressDeadline); the first health reported counts as
// healthy or unhealthy, and healthy moves RequireProgressBy to the health
// timestamp plus ProgressDeadline when that is later; an allocation whose
// health is set the other way by hand moves from one counter to the other.
// The changed deployment is written once, by write.
func (b *derivedRows) deployment(txn *memdb.Txn, ex, a *structs.Allocation) error {
	if a.DeploymentID == "" {
		return nil
	}
	hadHealth := ex != nil && ex.DeploymentStatus != nil && ex.DeploymentStatus.Healthy != nil
	hasHealth := a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil
	isHealthy := hasHealth && *a.DeploymentStatus.Healthy
	placed, healthy, unhealthy := 0, 0, 0
	switch {
	case ex == nil || ex.DeploymentID != a.DeploymentID:
		placed = 1
		if hasHealth {
			if isHealthy {
				healthy = 1
			} else {
				unhealthy = 1
			}
		}
	case !hadHealth && hasHealth:
		if isHealthy {
			healthy = 1
		} else {
			unhealthy = 1
		}
	case hadHealth && hasHealth && *ex.DeploymentStatus.Healthy && !isHealthy:
		healthy, unhealthy = -1, 1
	case hadHealth && hasHealth && !*ex.DeploymentStatus.Healthy && isHealthy:
		// Set healthy by hand after all: the counters follow either way.
		healthy, unhealthy = 1, -1
	}
	if placed == 0 && healthy == 0 && unhealthy == 0 {
		return nil
	}
	d := b.deps[a.DeploymentID]
	if d == nil {
		raw, err := txn.First(tableDeployment, "id", a.DeploymentID)
		if err != nil {
			return fmt.Errorf("state: deployment lookup: %w", err)
		}
		if raw == nil {
			return nil
		}
		d = copyDeployment(raw.(*structs.Deployment))
		if b.deps == nil {
			b.deps = map[string]*structs.Deployment{}
		}
		b.deps[d.ID] = d
	}
	st := d.TaskGroups[a.TaskGroup]
	if st == nil {
		return nil
	}
	st.PlacedAllocs += placed
	if placed != 0 && a.DeploymentStatus != nil && a.DeploymentStatus.Canary && !slices.Contains(st.PlacedCanaries, a.ID) {
		// Recorded with the placement, in its transaction: concurrent
		// plans cannot lose a canary.
		st.PlacedCanaries = append(st.PlacedCanaries, a.ID)
	}
	st.HealthyAllocs += healthy
	st.UnhealthyAllocs += unhealthy
	if pd := st.ProgressDeadline; pd > 0 {
		if placed != 0 && st.RequireProgressBy.IsZero() && a.ModifyTime != 0 {
			st.RequireProgressBy = time.Unix(0, a.ModifyTime).UTC().Add(pd)
		} else if healthy > 0 && !a.DeploymentStatus.Timestamp.IsZero() {
			if by := a.DeploymentStatus.Timestamp.Add(pd); by.After(st.RequireProgressBy) {
				st.RequireProgressBy = by
			}
		}
	}
	return nil
}

// writeDeployments stores the deployments this write changed, in ID order.
func (b *derivedRows) writeDeployments(txn *memdb.Txn, index uint64) error {
	if len(b.deps) == 0 {
		return nil
	}
	ids := make([]string, 0, len(b.deps))
	for id := range b.deps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		d := b.deps[id]
		d.ModifyIndex = index
		if err := txn.Insert(tableDeployment, d); err != nil {
			return fmt.Errorf("state: deployment insert: %w", err)
		}
	}
	b.deps = nil
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
