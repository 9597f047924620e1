package fsm

import (
	"fmt"
	"io"

	"github.com/drover-project/drover/internal/state"
)

// snapshotTableNames names the record types for `operator snapshot
// inspect`; a type this build does not name is shown by number.
var snapshotTableNames = map[SnapshotType]string{
	IndexSnapshot:               "Indexes",
	NodeSnapshot:                "Nodes",
	JobSnapshot:                 "Jobs",
	JobVersionSnapshot:          "JobVersions",
	JobSummarySnapshot:          "JobSummaries",
	JobSubmissionSnapshot:       "JobSubmissions",
	EvalSnapshot:                "Evaluations",
	AllocSnapshot:               "Allocations",
	DeploymentSnapshot:          "Deployments",
	NamespaceSnapshot:           "Namespaces",
	RootKeySnapshot:             "RootKeys",
	ClusterMetadataSnapshot:     "ClusterMetadata",
	ScalingEventSnapshot:        "ScalingEvents",
	ScalingPolicySnapshot:       "ScalingPolicies",
	PeriodicLaunchSnapshot:      "PeriodicLaunches",
	SchedulerConfigSnapshot:     "SchedulerConfig",
	TimeTableSnapshot:           "TimeTable",
	JobRestartSnapshot:          "JobRestarts",
	AutopilotConfigSnapshot:     "AutopilotConfig",
	NodePoolSnapshot:            "NodePools",
	VariableSnapshot:            "Variables",
	ServiceRegistrationSnapshot: "ServiceRegistrations",
	ACLPolicySnapshot:           "ACLPolicies",
	ACLTokenSnapshot:            "ACLTokens",
	ACLRoleSnapshot:             "ACLRoles",
	ACLAuthMethodSnapshot:       "ACLAuthMethods",
	ACLBindingRuleSnapshot:      "ACLBindingRules",
	OneTimeTokenSnapshot:        "OneTimeTokens",
}

// SnapshotTableName names a record type.
func SnapshotTableName(t SnapshotType) string {
	if n, ok := snapshotTableNames[t]; ok {
		return n
	}
	return fmt.Sprintf("Type%d", t)
}

// CheckSnapshot loads a snapshot stream into a throwaway state store, the
// way Restore would, and counts its records by table. A stream Restore
// would refuse is refused here, so a restore can be checked before Raft
// takes it (Raft keeps a snapshot it was given even when the FSM then
// fails to load it).
func CheckSnapshot(r io.Reader) (map[string]int, error) {
	st, err := state.NewStateStore()
	if err != nil {
		return nil, err
	}
	restore, err := st.Restore()
	if err != nil {
		return nil, err
	}
	defer restore.Abort()
	counts := map[string]int{}
	var times []TimeTableEntry
	if err := readSnapshot(r, restore, &times, func(t SnapshotType) { counts[SnapshotTableName(t)]++ }); err != nil {
		return nil, err
	}
	return counts, nil
}
