package state

import (
	"fmt"
	"reflect"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// Scaling policies are derived from the jobs: every job write brings the
// job's policies into the scaling_policy table. A policy's ID comes with the
// job (the server assigns it before the Raft entry); its CreateIndex is the
// write that first stored it and its ModifyIndex the last that changed it.
// A stopped job has no policies (an autoscaler has nothing to scale), a
// purged one neither; periodic and dispatched children have none of their
// own (they would share their parent's IDs).

// syncScalingPolicies makes the table hold exactly j's policies.
func syncScalingPolicies(txn *memdb.Txn, index uint64, j *structs.Job) error {
	var want []*structs.ScalingPolicy
	if !j.Stop && j.ParentID == "" {
		for _, p := range j.ScalingPolicies() {
			if p != nil && p.ID != "" {
				want = append(want, p)
			}
		}
	}
	existing, err := scalingPoliciesOfJob(txn, nil, j.Namespace, j.ID)
	if err != nil {
		return err
	}
	if len(want) == 0 && len(existing) == 0 {
		return nil
	}
	changed := false
	kept := map[string]bool{}
	for _, p := range want {
		kept[p.ID] = true
		c := *p
		c.CreateIndex, c.ModifyIndex = index, index
		raw, err := txn.First(tableScalingPolicy, "id", p.ID)
		if err != nil {
			return fmt.Errorf("state: scaling policy lookup: %w", err)
		}
		if raw != nil {
			old := raw.(*structs.ScalingPolicy)
			if samePolicy(old, &c) {
				continue
			}
			if old.Namespace == c.Namespace && old.Target[structs.ScalingTargetJob] == j.ID {
				c.CreateIndex = old.CreateIndex
			}
		}
		if err := txn.Insert(tableScalingPolicy, &c); err != nil {
			return fmt.Errorf("state: scaling policy insert: %w", err)
		}
		changed = true
	}
	for _, p := range existing {
		if kept[p.ID] {
			continue
		}
		if err := txn.Delete(tableScalingPolicy, p); err != nil {
			return fmt.Errorf("state: scaling policy delete: %w", err)
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return bumpIndex(txn, index, tableScalingPolicy)
}

// samePolicy reports whether two policies differ only in their indexes.
func samePolicy(a, b *structs.ScalingPolicy) bool {
	x, y := *a, *b
	x.CreateIndex, x.ModifyIndex, y.CreateIndex, y.ModifyIndex = 0, 0, 0, 0
	return reflect.DeepEqual(x, y)
}

// deleteScalingPolicies removes a purged job's policies.
func deleteScalingPolicies(txn *memdb.Txn, index uint64, namespace, id string) error {
	n, err := txn.DeleteAll(tableScalingPolicy, "job", namespace, id)
	if err != nil {
		return fmt.Errorf("state: scaling policy delete: %w", err)
	}
	if n == 0 {
		return nil
	}
	return bumpIndex(txn, index, tableScalingPolicy)
}

func scalingPoliciesOfJob(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) ([]*structs.ScalingPolicy, error) {
	iter, err := get(txn, ws, tableScalingPolicy, "job", namespace, id)
	if err != nil {
		return nil, err
	}
	var out []*structs.ScalingPolicy
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.ScalingPolicy))
	}
	return out, nil
}

// ScalingPolicyByID returns a policy, or nil.
func (s *reader) ScalingPolicyByID(ws memdb.WatchSet, id string) (*structs.ScalingPolicy, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableScalingPolicy, "id", id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.ScalingPolicy), nil
}

// ScalingPoliciesByJob returns a job's policies, sorted by ID.
func (s *reader) ScalingPoliciesByJob(ws memdb.WatchSet, namespace, id string) ([]*structs.ScalingPolicy, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	out, err := scalingPoliciesOfJob(txn, ws, namespace, id)
	if err != nil {
		return nil, err
	}
	structs.SortScalingPolicies(out)
	return out, nil
}

// ScalingPolicies iterates every policy in ID order (also used by FSM
// snapshots).
func (s *reader) ScalingPolicies(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	return get(txn, ws, tableScalingPolicy, "id")
}

// ScalingPolicyRestore loads a scaling policy.
func (r *StateRestore) ScalingPolicyRestore(p *structs.ScalingPolicy) error {
	return r.insert(tableScalingPolicy, p)
}
