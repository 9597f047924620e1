package fsm

import (
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"

	"github.com/drover-project/drover/internal/structs"
)

// applyKeys names the time each Raft entry type takes to apply, as Nomad
// names it: nomad.nomad.fsm.<name> (go-metrics adds the service prefix).
var applyKeys = func() (keys [256][]string) {
	for t, name := range map[structs.MessageType]string{
		structs.NodeRegisterRequestType:                 "register_node",
		structs.NodeDeregisterRequestType:               "deregister_node",
		structs.NodeUpdateStatusRequestType:             "node_status_update",
		structs.NodeBatchUpdateStatusRequestType:        "node_status_update_batch",
		structs.NodeUpdateEligibilityRequestType:        "node_eligibility_update",
		structs.JobRegisterRequestType:                  "register_job",
		structs.JobRegisterBatchRequestType:             "register_job_batch",
		structs.JobDeregisterRequestType:                "deregister_job",
		structs.EvalUpdateRequestType:                   "update_eval",
		structs.EvalDeleteRequestType:                   "delete_eval",
		structs.AllocClientUpdateRequestType:            "alloc_client_update",
		structs.ApplyPlanResultsRequestType:             "apply_plan_results",
		structs.ApplyPlanResultsBatchRequestType:        "apply_plan_results_batch",
		structs.NamespaceUpsertRequestType:              "apply_namespace_upsert",
		structs.NamespaceDeleteRequestType:              "apply_namespace_delete",
		structs.NodePoolUpsertRequestType:               "apply_node_pool_upsert",
		structs.NodePoolDeleteRequestType:               "apply_node_pool_delete",
		structs.RootKeyUpsertRequestType:                "apply_root_key_meta_upsert",
		structs.RootKeyDeleteRequestType:                "apply_root_key_meta_delete",
		structs.VarApplyStateRequestType:                "apply_variable_state",
		structs.VarRekeyRequestType:                     "apply_variable_rekey",
		structs.ClusterMetadataRequestType:              "cluster_meta",
		structs.SchedulerConfigRequestType:              "apply_scheduler_config",
		structs.AutopilotConfigRequestType:              "apply_autopilot_config",
		structs.JobStabilityRequestType:                 "job_stability",
		structs.ScalingEventRegisterRequestType:         "upsert_scaling_event",
		structs.JobVersionTagRequestType:                "job_version_tag",
		structs.DeploymentStatusUpdateRequestType:       "deployment_status_update",
		structs.DeploymentPromoteRequestType:            "deployment_promotion",
		structs.DeploymentAllocHealthRequestType:        "deployment_alloc_health",
		structs.AllocUpdateDesiredTransitionRequestType: "update_alloc_desired_transition",

		structs.ServiceRegistrationUpsertRequestType:        "upsert_service_registrations",
		structs.ServiceRegistrationDeleteByIDRequestType:    "delete_service_registration_id",
		structs.ServiceRegistrationDeleteByAllocRequestType: "delete_service_registration_alloc",
	} {
		keys[t] = []string{"nomad", "fsm", name}
	}
	for t, name := range aclApplyNames {
		keys[t] = []string{"nomad", "fsm", name}
	}
	return keys
}()

// measureApply records how long an entry of type t took to apply, from
// start. Unknown types are not recorded.
func measureApply(t structs.MessageType, start time.Time) {
	if key := applyKeys[t]; key != nil {
		metrics.MeasureSince(key, start)
	}
}
