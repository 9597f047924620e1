package structs

import "github.com/hashicorp/nomad/api"

// Spec parts the engine carries but does not (yet) interpret are the official
// wire types themselves: JSON stays identical and nothing a user wrote is lost.
type (
	Constraint              = api.Constraint
	Affinity                = api.Affinity
	Spread                  = api.Spread
	Service                 = api.Service
	Template                = api.Template
	TaskArtifact            = api.TaskArtifact
	Vault                   = api.Vault
	Consul                  = api.Consul
	DispatchPayloadConfig   = api.DispatchPayloadConfig
	VolumeMount             = api.VolumeMount
	VolumeRequest           = api.VolumeRequest
	TaskLifecycle           = api.TaskLifecycle
	UpdateStrategy          = api.UpdateStrategy
	MigrateStrategy         = api.MigrateStrategy
	PeriodicConfig          = api.PeriodicConfig
	ParameterizedJobConfig  = api.ParameterizedJobConfig
	DisconnectStrategy      = api.DisconnectStrategy
	ScalingPolicy           = api.ScalingPolicy
	Multiregion             = api.Multiregion
	JobUIConfig             = api.JobUIConfig
	DNSConfig               = api.DNSConfig
	CNIConfig               = api.CNIConfig
	WorkloadIdentity        = api.WorkloadIdentity
	Secret                  = api.Secret
	Action                  = api.Action
	TaskSchedule            = api.TaskSchedule
	TaskCSIPluginConfig     = api.TaskCSIPluginConfig
	RequestedDevice         = api.RequestedDevice
	NUMAResource            = api.NUMAResource
	JobVersionTag           = api.JobVersionTag
	DriverInfo              = api.DriverInfo
	NodeEvent               = api.NodeEvent
	DrainStrategy           = api.DrainStrategy
	DrainMetadata           = api.DrainMetadata
	HostVolumeInfo          = api.HostVolumeInfo
	HostNetworkInfo         = api.HostNetworkInfo
	NodeDeviceResource      = api.NodeDeviceResource
	NodeDevice              = api.NodeDevice
	NodeDeviceLocality      = api.NodeDeviceLocality
	Attribute               = api.Attribute
	AllocDeploymentStatus   = api.AllocDeploymentStatus
	AllocNetworkStatus      = api.AllocNetworkStatus
	AllocatedDeviceResource = api.AllocatedDeviceResource
	PlanAnnotations         = api.PlanAnnotations
	DesiredUpdates          = api.DesiredUpdates
	EvaluationStub          = api.EvaluationStub
)
