package structs

import "github.com/hashicorp/nomad/api"

// JobTrackedScalingEvents is how many scaling events are kept per group,
// newest first.
const JobTrackedScalingEvents = 20

// JobStabilityRequest marks one version of a job stable or unstable. It is
// also the Raft entry (JobStabilityRequestType).
type JobStabilityRequest struct {
	JobID      string
	JobVersion uint64
	Stable     bool
	WriteRequest
}

// JobStabilityResponse answers a stability change.
type JobStabilityResponse struct {
	JobModifyIndex uint64
	WriteMeta
}

// JobRevertRequest re-registers an earlier version of a job as a new version.
type JobRevertRequest struct {
	JobID               string
	JobVersion          uint64
	EnforcePriorVersion *uint64
	WriteRequest
}

// JobScaleRequest changes one group's count (or only records an event when
// Count is nil).
type JobScaleRequest struct {
	JobID          string
	Target         map[string]string
	Count          *int64
	Message        string
	Error          bool
	Meta           map[string]any
	PolicyOverride bool
	WriteRequest
}

// ScalingEvent is one recorded scaling action of a group; the wire shape is
// the api's.
type ScalingEvent = api.ScalingEvent

// ScalingEventRequest is the Raft entry (ScalingEventRegisterRequestType)
// that records a scaling event. Time is chosen before the entry is written;
// CreateIndex is the entry's index.
type ScalingEventRequest struct {
	Namespace    string
	JobID        string
	TaskGroup    string
	ScalingEvent *ScalingEvent
	WriteRequest
}

// JobScalingEvents are the recorded scaling events of one job, per group,
// newest first.
type JobScalingEvents struct {
	Namespace     string
	JobID         string
	ScalingEvents map[string][]*ScalingEvent
	ModifyIndex   uint64
}

// JobTagRequest tags (or, with Unset, untags) a job version. It is also the
// Raft entry (JobVersionTagRequestType); Tag.TaggedTime is set before.
type JobTagRequest struct {
	JobID   string
	Name    string
	Version uint64
	Tag     *JobVersionTag
	Unset   bool
	WriteRequest
}
