package structs

import (
	"fmt"
	"maps"
	"regexp"
	"time"
)

// Node pool Raft entries (66–69 are node pools').
const (
	NodePoolUpsertRequestType MessageType = 66
	NodePoolDeleteRequestType MessageType = 67
)

// validNodePoolName is Nomad's rule for node pool names.
var validNodePoolName = regexp.MustCompile("^[a-zA-Z0-9-_]{1,128}$")

const maxNodePoolDescriptionLength = 256

// NodePool is a named set of client nodes. Nodes register into one (the
// client's node_pool, "default" when unset); jobs are placed only on the
// nodes of their pool, except jobs of the built-in "all" pool.
type NodePool struct {
	Name        string
	Description string
	Meta        map[string]string
	// NodeIdentityTTL is the lifetime of the node identities signed for the
	// pool's nodes (24 h when 0; server/node_identity.go).
	NodeIdentityTTL time.Duration
	// SchedulerConfiguration overrides the cluster's scheduler
	// configuration for the pool's jobs when set.
	SchedulerConfiguration *NodePoolSchedulerConfiguration
	CreateIndex            uint64
	ModifyIndex            uint64
}

// NodePoolSchedulerConfiguration is a pool's scheduler settings; an unset
// field keeps the cluster's.
type NodePoolSchedulerConfiguration struct {
	SchedulerAlgorithm            string
	MemoryOversubscriptionEnabled *bool
}

// NodePoolUpsertRequest creates or updates node pools.
type NodePoolUpsertRequest struct {
	NodePools []*NodePool
	WriteRequest
}

// NodePoolDeleteRequest deletes node pools by name.
type NodePoolDeleteRequest struct {
	Names []string
	WriteRequest
}

// NodePoolListResponse lists node pools.
type NodePoolListResponse struct {
	NodePools []*NodePool
	QueryMeta
}

// NodePoolSpecificRequest names one node pool.
type NodePoolSpecificRequest struct {
	Name string
	QueryOptions
}

// SingleNodePoolResponse answers NodePool.GetNodePool; NodePool is nil
// when there is none of that name.
type SingleNodePoolResponse struct {
	NodePool *NodePool
	QueryMeta
}

// NodePoolNodesResponse lists a pool's nodes.
type NodePoolNodesResponse struct {
	Nodes []*NodeListStub
	QueryMeta
}

// NodePoolJobsResponse lists a pool's jobs.
type NodePoolJobsResponse struct {
	Jobs []*JobListStub
	QueryMeta
}

// ValidNodePoolName reports whether name follows Nomad's rule for node
// pool names (letters, digits, '-' and '_', 1 to 128 of them).
func ValidNodePoolName(name string) bool { return validNodePoolName.MatchString(name) }

// IsBuiltinNodePool reports whether name is "default" or "all".
func IsBuiltinNodePool(name string) bool {
	return name == DefaultNodePool || name == AllNodePool
}

// BuiltinNodePools are the pools every cluster has.
func BuiltinNodePools() []*NodePool {
	return []*NodePool{
		{Name: AllNodePool, Description: "Node pool with all nodes in the cluster."},
		{Name: DefaultNodePool, Description: "Default node pool."},
	}
}

// Copy returns a deep copy.
func (p *NodePool) Copy() *NodePool {
	if p == nil {
		return nil
	}
	c := *p
	c.Meta = maps.Clone(p.Meta)
	if p.SchedulerConfiguration != nil {
		sc := *p.SchedulerConfiguration
		if sc.MemoryOversubscriptionEnabled != nil {
			b := *sc.MemoryOversubscriptionEnabled
			sc.MemoryOversubscriptionEnabled = &b
		}
		c.SchedulerConfiguration = &sc
	}
	return &c
}

// Validate checks a pool as Nomad does; the errors name the field.
func (p *NodePool) Validate() error {
	var errs []string
	if !validNodePoolName.MatchString(p.Name) {
		errs = append(errs, fmt.Sprintf("invalid name %q, must match regex %s", p.Name, validNodePoolName))
	}
	if len(p.Description) > maxNodePoolDescriptionLength {
		errs = append(errs, fmt.Sprintf("description longer than %d", maxNodePoolDescriptionLength))
	}
	if p.NodeIdentityTTL < 0 {
		errs = append(errs, "NodeIdentityTTL must not be negative")
	}
	if sc := p.SchedulerConfiguration; sc != nil {
		switch sc.SchedulerAlgorithm {
		case "", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread:
		default:
			errs = append(errs, fmt.Sprintf("SchedulerConfiguration.SchedulerAlgorithm: invalid scheduler algorithm %q, must be %q or %q",
				sc.SchedulerAlgorithm, SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread))
		}
	}
	if len(errs) > 0 {
		return &ValidationError{Errors: errs}
	}
	return nil
}

// Apply returns cfg with the pool's overrides: algorithm and memory
// oversubscription.
func (sc *NodePoolSchedulerConfiguration) Apply(algorithm string, oversub bool) (string, bool) {
	if sc == nil {
		return algorithm, oversub
	}
	if sc.SchedulerAlgorithm != "" {
		algorithm = sc.SchedulerAlgorithm
	}
	if sc.MemoryOversubscriptionEnabled != nil {
		oversub = *sc.MemoryOversubscriptionEnabled
	}
	return algorithm, oversub
}
