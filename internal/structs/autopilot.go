package structs

import "time"

// AutopilotConfigRequestType writes the autopilot configuration
// (AutopilotSetConfigRequest).
const AutopilotConfigRequestType MessageType = 34

// AutopilotConfig is the cluster's autopilot configuration, stored through
// Raft (Nomad's /v1/operator/autopilot/configuration shape).
type AutopilotConfig struct {
	// CleanupDeadServers removes failed servers from Raft (when a quorum
	// of MinQuorum remains).
	CleanupDeadServers bool
	// ServerStabilizationTime is how long a new server must be healthy
	// before it is promoted to voter.
	ServerStabilizationTime time.Duration
	// LastContactThreshold is how long a server may go without hearing
	// from the leader and still be healthy.
	LastContactThreshold time.Duration
	// MaxTrailingLogs is how many entries a healthy server may lag.
	MaxTrailingLogs uint64
	// MinQuorum is the fewest servers dead-server cleanup leaves.
	MinQuorum uint
	// Enterprise features in Nomad: stored and returned, not acted on.
	EnableRedundancyZones   bool
	DisableUpgradeMigration bool
	EnableCustomUpgrades    bool

	CreateIndex uint64
	ModifyIndex uint64
}

// DefaultAutopilotConfig is Nomad's default.
func DefaultAutopilotConfig() *AutopilotConfig {
	return &AutopilotConfig{CleanupDeadServers: true, ServerStabilizationTime: 10 * time.Second,
		LastContactThreshold: 200 * time.Millisecond, MaxTrailingLogs: 250}
}

// Validate reports the first bad field as a coded 400.
func (c *AutopilotConfig) Validate() error {
	switch {
	case c.ServerStabilizationTime < 0:
		return NewErrCoded(400, "ServerStabilizationTime must not be negative")
	case c.LastContactThreshold < 0:
		return NewErrCoded(400, "LastContactThreshold must not be negative")
	}
	return nil
}

// AutopilotSetConfigRequest writes the autopilot configuration. With CAS
// set, it is written only if the stored ModifyIndex equals
// Config.ModifyIndex.
type AutopilotSetConfigRequest struct {
	Config AutopilotConfig
	CAS    bool
	WriteRequest
}

// AutopilotConfigResponse answers a read of the configuration.
type AutopilotConfigResponse struct {
	Config *AutopilotConfig
	QueryMeta
}

// AutopilotSetConfigResponse answers a write: Updated is false when a CAS
// write found another index.
type AutopilotSetConfigResponse struct {
	Updated bool
	WriteMeta
}

// AutopilotServerHealth is one server's health as autopilot sees it.
type AutopilotServerHealth struct {
	ID          string
	Name        string
	Address     string
	SerfStatus  string
	Version     string
	Leader      bool
	Voter       bool
	LastContact time.Duration
	LastTerm    uint64
	LastIndex   uint64
	Healthy     bool
	StableSince time.Time
}

// AutopilotHealthResponse is the cluster's health (Nomad's
// OperatorHealthReply).
type AutopilotHealthResponse struct {
	Healthy          bool
	FailureTolerance int
	Servers          []AutopilotServerHealth
	Leader           string
	Voters           []string
}

// RaftStatsResponse is one server's Raft progress, which the leader's
// autopilot asks every server for.
type RaftStatsResponse struct {
	LastContact time.Duration // -1: never heard from a leader
	LastTerm    uint64
	LastIndex   uint64
}
