package server

import (
	"net"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

// Config configures a server.
type Config struct {
	// PeriodicClock drives the periodic dispatcher; nil is the wall clock
	// (tests inject clock.Fake).
	PeriodicClock clock.Clock

	NodeName   string
	NodeID     string // Raft server ID; random when empty
	Region     string
	Datacenter string
	Version    string

	// ACLEnabled turns ACL enforcement on (acl.enabled): the ACL endpoints
	// answer and every RPC that checks tokens enforces them.
	ACLEnabled bool
	// AuthoritativeRegion owns the global ACL objects (policies, roles,
	// auth methods, binding rules, global tokens); "" means this region.
	// In any other region the leader mirrors them from there
	// (acl_replication.go) and writes of them are forwarded there.
	AuthoritativeRegion string
	// ReplicationToken is the authoritative region's management token
	// secret the replication loop reads with (acl.replication_token).
	ReplicationToken string

	DevMode bool   // in-memory Raft and state, single node
	DataDir string // the server's own directory: raft/ holds the log and snapshots (non-dev)

	BootstrapExpect int

	// SerfBindAddr is the "ip:port" serf LAN gossip listens on (TCP and
	// UDP); empty runs no gossip (in-process tests). SerfAdvertise is the
	// address announced to the other servers. SerfEncryptKey, when set,
	// encrypts gossip (server.encrypt). SerfTuning, when set, adjusts the
	// serf and memberlist configs last (tests shorten failure detection).
	SerfBindAddr     string
	SerfAdvertise    string
	SerfEncryptKey   []byte
	SerfTuning       func(*serf.Config, *memberlist.Config)
	RejoinAfterLeave bool
	// NonVoter joins Raft without a vote (server.non_voting_server).
	NonVoter bool
	// AutopilotConfig is the autopilot configuration the first leader
	// stores when none is (the agent's `autopilot` block); nil means
	// Nomad's defaults. AutopilotInterval is how often autopilot
	// reconciles (its health updates run five times as often); 0 means
	// 10 s.
	AutopilotConfig   *structs.AutopilotConfig
	AutopilotInterval time.Duration

	// RPCListener is the listener for the RPC port; when nil one is opened
	// on RPCAddr.
	RPCListener net.Listener
	RPCAddr     string
	// RPCAdvertise is the address other agents use to reach this server.
	RPCAdvertise string
	// RPCTLS is the RPC port's TLS (nil: plaintext only); RPCDialer dials
	// other servers (forwarding, Raft, tunnels) the same way.
	RPCTLS    *droverrpc.TLSListenerConfig
	RPCDialer *droverrpc.Dialer

	// RaftTransport overrides the transport (tests). When nil Raft rides on
	// the RPC port.
	RaftTransport raft.Transport
	// RaftConfig overrides Raft timing (tests, dev).
	RaftConfig *raft.Config
	// RaftSnapshotThreshold and RaftSnapshotInterval tune how often Raft
	// snapshots the FSM (0 keeps Raft's defaults: 8192 entries / 120 s).
	RaftSnapshotThreshold uint64
	RaftSnapshotInterval  time.Duration
	// RaftTrailingLogs is how many log entries a snapshot leaves behind for
	// followers to catch up from (0 keeps 10,240).
	RaftTrailingLogs uint64
	// RaftNoFreelistSync stops bolt writing its free-page list on every
	// commit of the Raft log (less written per entry; the list is rebuilt
	// by a scan when the log is opened): server.raft_boltdb.no_freelist_sync.
	RaftNoFreelistSync bool
	// Peers is the initial voter set to bootstrap with (including self). When
	// empty and BootstrapExpect <= 1 the server bootstraps alone.
	Peers []raft.Server

	// NumSchedulers and EnabledSchedulers are the worker pool's starting
	// values; Server.SetSchedulerWorkerConfig changes them at runtime.
	NumSchedulers      int
	EnabledSchedulers  []string
	SchedulerAlgorithm string
	// Preemption per job type (Nomad's scheduler config defaults: system
	// on, the others off). The scheduler evicts allocations of jobs at
	// least 10 priority points lower when a placement does not fit.
	PreemptionSystemEnabled   bool
	PreemptionSysBatchEnabled bool
	PreemptionServiceEnabled  bool
	PreemptionBatchEnabled    bool

	// SchedulerAlgorithm, the Preemption fields and these three are the
	// scheduler configuration the first leader stores when none is
	// (server.default_scheduler_config); from then on the stored one,
	// changed through /v1/operator/scheduler/configuration, is what the
	// schedulers read (a server that has none stored yet uses these).
	MemoryOversubscriptionEnabled bool
	RejectJobRegistration         bool
	PauseEvalBroker               bool

	MinHeartbeatTTL        time.Duration
	MaxHeartbeatsPerSecond float64
	HeartbeatGrace         time.Duration
	FailoverHeartbeatTTL   time.Duration
	// HeartbeatClock drives heartbeat deadlines and the sweeper (tests
	// inject a fake clock); nil is the wall clock.
	HeartbeatClock clock.Clock

	// JobMaxCount bounds the sum of a job's group counts at register, scale,
	// plan and validate (server.job_max_count): 0 takes DefaultJobMaxCount,
	// a negative value turns the limit off.
	JobMaxCount int

	EvalNackTimeout   time.Duration
	EvalDeliveryLimit int

	RPCHoldTimeout time.Duration
	// RPCForwardTimeout bounds a call this server forwards to the leader:
	// a leader that took the call and then hangs is given up on after it
	// (a blocking query or a dequeue gets its own wait on top). A write
	// given up on answers that its outcome is unknown.
	RPCForwardTimeout time.Duration

	// GC is the core garbage collection's schedule and thresholds
	// (core_gc.go).
	GC GCConfig

	// JobMaxSourceSize bounds the jobspec source kept with a job version
	// (server.job_max_source_size); 0 means DefaultJobMaxSourceSize.
	JobMaxSourceSize int64

	// EventBufferSize is how many Raft entries' event batches the event
	// stream keeps for subscribers to read or resume from
	// (server.event_buffer_size; 0 means events.DefaultBufferSize).
	// DisableEventBroker turns the stream off
	// (server.enable_event_broker = false).
	EventBufferSize    int
	DisableEventBroker bool

	// DeploymentQueryRateLimit is how many state queries per second the
	// deployment watcher makes at most, all deployments together
	// (server.deploy_query_rate_limit; 0 means
	// deploywatch.DefaultQueryRate, 100).
	DeploymentQueryRateLimit float64

	// StatsInterval is how often the leader publishes its queue gauges
	// (telemetry.collection_interval; 0 means one second).
	StatsInterval time.Duration

	Logger hclog.Logger

	// workerRPC, when set, replaces the in-process RPC the scheduler
	// workers call (tests inject failures with it).
	workerRPC func(method string, args, reply any) error
	// workers, when > 0, replaces NumSchedulers*workersPerScheduler as the
	// number of workers (tests).
	workers int
	// brokerClock and schedulerClock, when set, replace the wall clock of
	// the eval broker (WaitUntil, nack timers) and of the schedulers
	// (tests that move time by hand, as the reconnect model test does).
	brokerClock    clock.Clock
	schedulerClock func() time.Time
	// wrapRaftTransport, when set, wraps the Raft transport Raft is given
	// (tests inject faults through it; forwarding still finds the leader by
	// its real address).
	wrapRaftTransport func(raft.Transport) raft.Transport
	// applyErrHook, when set, sees Raft's answer to every entry this
	// server writes (after the entry is applied or failed) and returns the
	// answer the writer gets: tests inject a leadership loss after the
	// append with it.
	applyErrHook func(t structs.MessageType, err error) error
	// allocBatchWindow, when > 0, replaces the 50 ms window client alloc
	// updates are batched over (tests making many pushes).
	allocBatchWindow time.Duration
}

// bootstrapSchedulerConfig is the scheduler configuration the config
// asks for, stored by the first leader when none is.
func (c *Config) bootstrapSchedulerConfig() *structs.SchedulerConfiguration {
	return &structs.SchedulerConfiguration{
		SchedulerAlgorithm: c.SchedulerAlgorithm,
		PreemptionConfig: structs.PreemptionConfig{
			SystemSchedulerEnabled:   c.PreemptionSystemEnabled,
			SysBatchSchedulerEnabled: c.PreemptionSysBatchEnabled,
			BatchSchedulerEnabled:    c.PreemptionBatchEnabled,
			ServiceSchedulerEnabled:  c.PreemptionServiceEnabled,
		},
		MemoryOversubscriptionEnabled: c.MemoryOversubscriptionEnabled,
		RejectJobRegistration:         c.RejectJobRegistration,
		PauseEvalBroker:               c.PauseEvalBroker,
	}
}

// DefaultConfig returns production defaults.
func DefaultConfig() *Config {
	return &Config{
		Region:             "global",
		Datacenter:         "dc1",
		BootstrapExpect:    1,
		NumSchedulers:      runtime.NumCPU(),
		EnabledSchedulers:  []string{"service", "batch", "system", "sysbatch", "_core"}, // Nomad's; no _core evals run here
		SchedulerAlgorithm: "binpack",
		// Only system preemption is on by default, as in Nomad.
		PreemptionSystemEnabled: true,
		MinHeartbeatTTL:         10 * time.Second,
		MaxHeartbeatsPerSecond:  5000,
		HeartbeatGrace:          10 * time.Second,
		FailoverHeartbeatTTL:    300 * time.Second,
		JobMaxCount:             DefaultJobMaxCount,
		EvalNackTimeout:         60 * time.Second,
		EvalDeliveryLimit:       3,
		RPCHoldTimeout:          5 * time.Second,
		RPCForwardTimeout:       30 * time.Second,
	}
}

func (c *Config) fill() {
	d := DefaultConfig()
	if c.Region == "" {
		c.Region = d.Region
	}
	if c.Datacenter == "" {
		c.Datacenter = d.Datacenter
	}
	if c.NumSchedulers <= 0 {
		c.NumSchedulers = d.NumSchedulers
	}
	if len(c.EnabledSchedulers) == 0 {
		c.EnabledSchedulers = d.EnabledSchedulers
	}
	if c.SchedulerAlgorithm == "" {
		c.SchedulerAlgorithm = d.SchedulerAlgorithm
	}
	if c.MinHeartbeatTTL == 0 {
		c.MinHeartbeatTTL = d.MinHeartbeatTTL
	}
	if c.MaxHeartbeatsPerSecond == 0 {
		c.MaxHeartbeatsPerSecond = d.MaxHeartbeatsPerSecond
	}
	if c.HeartbeatGrace == 0 {
		c.HeartbeatGrace = d.HeartbeatGrace
	}
	if c.FailoverHeartbeatTTL == 0 {
		c.FailoverHeartbeatTTL = d.FailoverHeartbeatTTL
	}
	if c.JobMaxCount == 0 {
		c.JobMaxCount = DefaultJobMaxCount
	}
	if c.EvalNackTimeout == 0 {
		c.EvalNackTimeout = d.EvalNackTimeout
	}
	if c.EvalDeliveryLimit == 0 {
		c.EvalDeliveryLimit = d.EvalDeliveryLimit
	}
	if c.RPCHoldTimeout == 0 {
		c.RPCHoldTimeout = d.RPCHoldTimeout
	}
	if c.RPCForwardTimeout <= 0 {
		c.RPCForwardTimeout = d.RPCForwardTimeout
	}
	if c.AutopilotInterval <= 0 {
		c.AutopilotInterval = 10 * time.Second
	}
	c.GC.fill()
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}
