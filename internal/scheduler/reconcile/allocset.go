package reconcile

import (
	"sort"

	"github.com/drover-project/drover/internal/structs"
)

// allocSet is a set of allocations by ID. Steps that change a set they
// are handed take a pointer to it, so a reader sees which sets a step
// mutates.
type allocSet map[string]*structs.Allocation

func newAllocSet(allocs ...*structs.Allocation) allocSet {
	s := make(allocSet, len(allocs))
	for _, a := range allocs {
		if a != nil {
			s[a.ID] = a
		}
	}
	return s
}

// union returns a new set holding s and every other set.
func (s allocSet) union(others ...allocSet) allocSet {
	out := make(allocSet, len(s))
	for id, a := range s {
		out[id] = a
	}
	for _, o := range others {
		for id, a := range o {
			out[id] = a
		}
	}
	return out
}

// difference returns a new set of s without the allocations in others.
func (s allocSet) difference(others ...allocSet) allocSet {
	out := make(allocSet, len(s))
outer:
	for id, a := range s {
		for _, o := range others {
			if _, ok := o[id]; ok {
				continue outer
			}
		}
		out[id] = a
	}
	return out
}

// fromKeys returns the allocations of s with the given IDs.
func (s allocSet) fromKeys(ids []string) allocSet {
	out := make(allocSet)
	for _, id := range ids {
		if a, ok := s[id]; ok {
			out[id] = a
		}
	}
	return out
}

// nameOrder lists the set by name index, then create index, then ID:
// decisions that take "the first n" are then reproducible.
func (s allocSet) nameOrder() []*structs.Allocation {
	out := make([]*structs.Allocation, 0, len(s))
	for _, a := range s {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ai, bi := a.Index(), b.Index(); ai != bi {
			return ai < bi
		}
		if a.CreateIndex != b.CreateIndex {
			return a.CreateIndex < b.CreateIndex
		}
		return a.ID < b.ID
	})
	return out
}

// nameSet is the set of the allocations' names.
func (s allocSet) nameSet() map[string]struct{} {
	out := make(map[string]struct{}, len(s))
	for _, a := range s {
		out[a.Name] = struct{}{}
	}
	return out
}

// byDeployment splits s into the allocations of deployment id and the rest.
func (s allocSet) byDeployment(id string) (in, out allocSet) {
	in, out = make(allocSet), make(allocSet)
	for k, a := range s {
		if id != "" && a.DeploymentID == id {
			in[k] = a
		} else {
			out[k] = a
		}
	}
	return in, out
}

// OnVersion reports whether a runs job's current version: its job's
// Version and CreateIndex are the job's. JobModifyIndex is not enough: two
// registrations committed in one Raft entry share it, and CreateIndex tells
// a purged and re-registered job (whose versions restart) from the old one.
func OnVersion(a *structs.Allocation, job *structs.Job) bool {
	return a.Job != nil && job != nil && a.Job.Version == job.Version && a.Job.CreateIndex == job.CreateIndex
}

// olderVersion reports whether a runs a version older than job's.
func olderVersion(a *structs.Allocation, job *structs.Job) bool {
	return a.Job == nil || a.Job.CreateIndex < job.CreateIndex ||
		a.Job.CreateIndex == job.CreateIndex && a.Job.Version < job.Version
}

func isCanary(a *structs.Allocation) bool {
	return a.DeploymentStatus != nil && a.DeploymentStatus.Canary
}

func isHealthy(a *structs.Allocation) bool {
	return a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy
}

func isUnhealthy(a *structs.Allocation) bool {
	return a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && !*a.DeploymentStatus.Healthy
}

func boolSet(p *bool) bool { return p != nil && *p }
