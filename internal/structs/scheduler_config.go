package structs

import "fmt"

// Scheduling algorithms (SchedulerConfiguration.SchedulerAlgorithm).
const (
	SchedulerAlgorithmBinpack = "binpack"
	SchedulerAlgorithmSpread  = "spread"
)

// ErrJobRegistrationDisabled is what job register, dispatch and scale
// answer while the operator has set RejectJobRegistration. Without ACLs no
// token is a management token, so every such request is refused (as Nomad
// does); it is a 403, like Nomad's permission-denied error.
var ErrJobRegistrationDisabled = NewErrCoded(403, "Permission denied: job registration, dispatch, and scale are disabled by the scheduler configuration")

// SchedulerConfiguration is the cluster-wide scheduler configuration the
// operator changes at runtime (`/v1/operator/scheduler/configuration`). It
// is stored through Raft; every scheduler reads it from the state snapshot
// it works on, so a change applies to the next evaluation any worker takes.
type SchedulerConfiguration struct {
	// SchedulerAlgorithm is "binpack" (fill nodes) or "spread" (use the
	// emptiest); "" reads as binpack.
	SchedulerAlgorithm string
	// PreemptionConfig says, per scheduler type, whether placements may
	// evict allocations of lower-priority jobs.
	PreemptionConfig PreemptionConfig
	// MemoryOversubscriptionEnabled lets tasks use memory_max; while off,
	// the scheduler grants tasks their memory only (memory_max dropped).
	MemoryOversubscriptionEnabled bool
	// RejectJobRegistration refuses job register, dispatch and scale.
	RejectJobRegistration bool
	// PauseEvalBroker stops the leader's eval broker handing out
	// evaluations: new ones stay pending until it is unpaused.
	PauseEvalBroker bool
	// NodeLimitForFeasibilityChecks is stored and returned as Nomad does.
	NodeLimitForFeasibilityChecks uint

	CreateIndex uint64
	ModifyIndex uint64
}

// PreemptionConfig enables preemption per scheduler type.
type PreemptionConfig struct {
	SystemSchedulerEnabled   bool
	SysBatchSchedulerEnabled bool
	BatchSchedulerEnabled    bool
	ServiceSchedulerEnabled  bool
}

// DefaultSchedulerConfiguration is Nomad's default: binpack, preemption
// for system jobs only, no memory oversubscription.
func DefaultSchedulerConfiguration() *SchedulerConfiguration {
	return &SchedulerConfiguration{
		SchedulerAlgorithm: SchedulerAlgorithmBinpack,
		PreemptionConfig:   PreemptionConfig{SystemSchedulerEnabled: true},
	}
}

// EffectiveAlgorithm is the algorithm to schedule with ("" is binpack).
func (c *SchedulerConfiguration) EffectiveAlgorithm() string {
	if c == nil || c.SchedulerAlgorithm == "" {
		return SchedulerAlgorithmBinpack
	}
	return c.SchedulerAlgorithm
}

// PreemptionEnabled returns the per-job-type switch the schedulers read.
func (c *SchedulerConfiguration) PreemptionEnabled() map[string]bool {
	p := c.PreemptionConfig
	return map[string]bool{
		JobTypeSystem:   p.SystemSchedulerEnabled,
		JobTypeSysBatch: p.SysBatchSchedulerEnabled,
		JobTypeService:  p.ServiceSchedulerEnabled,
		JobTypeBatch:    p.BatchSchedulerEnabled,
	}
}

// Validate checks the operator-set fields.
func (c *SchedulerConfiguration) Validate() error {
	switch c.SchedulerAlgorithm {
	case "", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread:
		return nil
	}
	return NewErrCoded(400, "SchedulerAlgorithm: invalid scheduler algorithm %q: must be %q or %q",
		c.SchedulerAlgorithm, SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread)
}

func (c *SchedulerConfiguration) String() string {
	return fmt.Sprintf("algorithm=%s preempt=%+v oversub=%v reject=%v pause=%v",
		c.EffectiveAlgorithm(), c.PreemptionConfig, c.MemoryOversubscriptionEnabled, c.RejectJobRegistration, c.PauseEvalBroker)
}

// SchedulerSetConfigRequest writes the scheduler configuration through
// Raft (SchedulerConfigRequestType). With CAS set, the write happens only
// if the stored configuration's ModifyIndex equals Config.ModifyIndex
// (0: only if none is stored).
type SchedulerSetConfigRequest struct {
	Config SchedulerConfiguration
	CAS    bool
	WriteRequest
}

// SchedulerConfigurationResponse answers a read of the configuration.
type SchedulerConfigurationResponse struct {
	SchedulerConfig *SchedulerConfiguration
	QueryMeta
}

// SchedulerSetConfigurationResponse answers a write: Updated is false when
// a CAS write found another index.
type SchedulerSetConfigurationResponse struct {
	Updated bool
	WriteMeta
}

// EvalOperatorDeleteRequest deletes evaluations by ID or by filter
// (`DELETE /v1/evaluations`); only while the eval broker is paused.
type EvalOperatorDeleteRequest struct {
	EvalIDs []string
	Filter  string
	WriteRequest
}

// EvalOperatorDeleteResponse reports how many evaluations were deleted.
type EvalOperatorDeleteResponse struct {
	Count int
	WriteMeta
}
