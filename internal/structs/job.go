package structs

import "time"

// Job is the engine's view of a submitted job. Field names match Nomad's so
// the JSON encoding is the shape api.Job decodes.
type Job struct {
	_struct struct{} `codec:",omitempty"` // msgpack omits zero fields: see msgpack_tags.go

	Region                   string
	Namespace                string
	ID                       string
	ParentID                 string
	Name                     string
	Type                     string
	Priority                 int
	AllAtOnce                bool
	Datacenters              []string
	NodePool                 string
	Constraints              []*Constraint
	Affinities               []*Affinity
	Spreads                  []*Spread
	TaskGroups               []*TaskGroup
	Update                   *UpdateStrategy
	Multiregion              *Multiregion
	Periodic                 *PeriodicConfig
	ParameterizedJob         *ParameterizedJobConfig
	Reschedule               *ReschedulePolicy
	Migrate                  *MigrateStrategy
	Dispatched               bool
	DispatchIdempotencyToken string
	Payload                  []byte
	Meta                     map[string]string
	UI                       *JobUIConfig
	ConsulNamespace          string
	VaultNamespace           string
	NomadTokenID             string

	Stop              bool
	Status            string
	StatusDescription string
	Stable            bool
	Version           uint64
	VersionTag        *JobVersionTag
	SubmitTime        int64
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
}

// TaskGroup is a set of tasks placed together on one node.
type TaskGroup struct {
	_struct struct{} `codec:",omitempty"` // msgpack omits zero fields: see msgpack_tags.go

	Name             string
	Count            int
	Constraints      []*Constraint
	Affinities       []*Affinity
	Spreads          []*Spread
	Tasks            []*Task
	Volumes          map[string]*VolumeRequest
	RestartPolicy    *RestartPolicy
	Disconnect       *DisconnectStrategy
	ReschedulePolicy *ReschedulePolicy
	EphemeralDisk    *EphemeralDisk
	Update           *UpdateStrategy
	Migrate          *MigrateStrategy
	Networks         []*NetworkResource
	Meta             map[string]string
	Services         []*Service
	ShutdownDelay    *time.Duration
	MaxRunDuration   *time.Duration
	Scaling          *ScalingPolicy
	Consul           *Consul

	StopAfterClientDisconnect *time.Duration
	MaxClientDisconnect       *time.Duration
	PreventRescheduleOnLost   bool
}

// Task is one process (or container, VM) run by a driver.
type Task struct {
	_struct struct{} `codec:",omitempty"` // msgpack omits zero fields: see msgpack_tags.go

	Name            string
	Driver          string
	User            string
	Lifecycle       *TaskLifecycle
	Config          map[string]any
	Constraints     []*Constraint
	Affinities      []*Affinity
	Env             map[string]string
	Services        []*Service
	Resources       *Resources
	RestartPolicy   *RestartPolicy
	Meta            map[string]string
	KillTimeout     time.Duration
	LogConfig       *LogConfig
	Artifacts       []*TaskArtifact
	Vault           *Vault
	Consul          *Consul
	Templates       []*Template
	DispatchPayload *DispatchPayloadConfig
	VolumeMounts    []*VolumeMount
	CSIPluginConfig *TaskCSIPluginConfig `json:",omitempty"`
	Leader          bool
	ShutdownDelay   time.Duration
	KillSignal      string
	Kind            string
	ScalingPolicies []*ScalingPolicy
	Secrets         []*Secret
	Identity        *WorkloadIdentity
	Identities      []*WorkloadIdentity
	Actions         []*Action
	Schedule        *TaskSchedule
}

// RestartPolicy says how the client restarts a task that exits.
type RestartPolicy struct {
	Attempts        int
	Interval        time.Duration
	Delay           time.Duration
	Mode            string
	RenderTemplates bool
}

// Restart modes.
const (
	RestartPolicyModeDelay = "delay"
	RestartPolicyModeFail  = "fail"
)

// ReschedulePolicy says how the server replaces failed allocations.
type ReschedulePolicy struct {
	Attempts      int
	Interval      time.Duration
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool
}

// EphemeralDisk is the group's scratch disk.
type EphemeralDisk struct {
	Sticky  bool
	SizeMB  int
	Migrate bool
}

// StickyOrMigrate reports whether a replacement allocation keeps the
// previous allocation's data: sticky, or migrate (which implies sticky).
func (d *EphemeralDisk) StickyOrMigrate() bool {
	return d != nil && (d.Sticky || d.Migrate)
}

// LogConfig bounds a task's rotated log files.
type LogConfig struct {
	MaxFiles      int
	MaxFileSizeMB int
	Disabled      bool
}

// LookupTaskGroup returns the named group or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	if j == nil {
		return nil
	}
	for _, tg := range j.TaskGroups {
		if tg.Name == name {
			return tg
		}
	}
	return nil
}

// LookupTask returns the named task or nil.
func (tg *TaskGroup) LookupTask(name string) *Task {
	if tg == nil {
		return nil
	}
	for _, t := range tg.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// NamespacedID returns the job's key.
func (j *Job) NamespacedID() NamespacedID {
	return NamespacedID{Namespace: j.Namespace, ID: j.ID}
}

// IsPeriodic reports whether the job is a periodic parent.
func (j *Job) IsPeriodic() bool {
	return j.Periodic != nil && (j.Periodic.Enabled == nil || *j.Periodic.Enabled)
}

// IsParameterized reports whether the job is a parameterized parent.
func (j *Job) IsParameterized() bool {
	return j.ParameterizedJob != nil && !j.Dispatched
}

// IsBatchLike reports whether allocations of the job run to completion.
func (j *Job) IsBatchLike() bool {
	return j.Type == JobTypeBatch || j.Type == JobTypeSysBatch
}

// Copy returns a deep copy of the job.
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	var out Job
	mustDeepCopy(j, &out)
	return &out
}

// Stub returns the list view of the job.
func (j *Job) Stub(summary *JobSummary) *JobListStub {
	return &JobListStub{
		ID:                j.ID,
		ParentID:          j.ParentID,
		Name:              j.Name,
		Namespace:         j.Namespace,
		Datacenters:       j.Datacenters,
		NodePool:          j.NodePool,
		Type:              j.Type,
		Priority:          j.Priority,
		Periodic:          j.IsPeriodic(),
		ParameterizedJob:  j.IsParameterized(),
		Stop:              j.Stop,
		Status:            j.Status,
		StatusDescription: j.StatusDescription,
		JobSummary:        summary,
		CreateIndex:       j.CreateIndex,
		ModifyIndex:       j.ModifyIndex,
		JobModifyIndex:    j.JobModifyIndex,
		SubmitTime:        j.SubmitTime,
		Meta:              j.Meta,
		Version:           j.Version,
	}
}

// JobListStub is the shape of one entry of GET /v1/jobs.
type JobListStub struct {
	ID                string
	ParentID          string
	Name              string
	Namespace         string `json:",omitempty"`
	Datacenters       []string
	NodePool          string
	Multiregion       *Multiregion
	Type              string
	Priority          int
	Periodic          bool
	ParameterizedJob  bool
	Stop              bool
	Status            string
	StatusDescription string
	JobSummary        *JobSummary
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
	SubmitTime        int64
	Meta              map[string]string `json:",omitempty"`
	Version           uint64
}

// NamespacedID identifies a namespaced object.
type NamespacedID struct {
	Namespace string
	ID        string
}

func (n NamespacedID) String() string { return n.Namespace + "/" + n.ID }
