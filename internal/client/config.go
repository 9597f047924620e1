package client

import (
	"time"

	"github.com/drover-project/drover/internal/client/getter"
	"github.com/drover-project/drover/internal/devices"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/hashicorp/go-hclog"
)

// RPCer calls a server RPC method ("Node.Register", ...).
type RPCer interface {
	RPC(method string, args, reply any) error
}

// ServerLearner is implemented by an RPCer that keeps a list of servers
// (the agent's server manager): the client hands it the servers each
// registration and heartbeat answer names, so the list follows the cluster.
type ServerLearner interface {
	SetServers(addrs []string)
}

// Reserved is client.reserved: resources held back from scheduling.
type Reserved struct {
	CPU           int // MHz
	MemoryMB      int
	DiskMB        int
	ReservedPorts string // "22,80,8000-8100"
	// Cores is the cpuset of cores held back from tasks\' `cores` ("0-1").
	Cores string
}

// Config configures a Client.
type Config struct {
	Name       string
	Datacenter string
	Region     string
	NodeClass  string
	NodePool   string
	Meta       map[string]string

	DataDir  string
	StateDir string // default <DataDir>/client
	AllocDir string // default <DataDir>/alloc

	NetworkInterface string
	// BindAddr is the agent's advertise/bind address; it picks the
	// fingerprinted interface when NetworkInterface is empty.
	// TLSEnabled: the agent serves its HTTP API over TLS (node.TLSEnabled).
	TLSEnabled bool
	BindAddr   string
	// HTTPAddr is the "host:port" the agent's HTTP API is reached at
	// (advertise.http): the node's HTTPAddr, which API clients dial for
	// node-local calls (Nomad's GetNodeClient). Empty: the fingerprinted
	// address with port 4646.
	HTTPAddr        string
	CPUTotalCompute int
	// ReservableCores limits the cores tasks may reserve ("0-3"; empty:
	// all), client.reservable_cores.
	ReservableCores string
	MemoryTotalMB   int
	MinDynamicPort  int
	MaxDynamicPort  int
	Reserved        Reserved
	// Options is client.options ("fingerprint.denylist", ...).
	Options        map[string]string
	MaxKillTimeout time.Duration
	DevMode        bool
	// Artifacts is client.artifact: limits and local source isolation of
	// the tasks' artifact downloads (nil: no limits).
	Artifacts *getter.Config
	// DrainOnShutdown, if set, drains the node before a graceful shutdown
	// (drain_self.go).
	DrainOnShutdown *DrainOnShutdown

	Drivers []drivers.Driver
	// Devices are the device plugins (nil: none).
	Devices *devices.Manager
	RPC     RPCer
	Logger  hclog.Logger
	Version string
	// DetectForeignPorts reports ports bound by processes the client did not
	// start in Node.ForeignPorts.
	DetectForeignPorts bool
	Clock              func() time.Time
	// StatsInterval is how often the client samples its host and publishes
	// its gauges (telemetry.collection_interval); 0 publishes none and
	// samples the host only when asked (/v1/client/stats).
	StatsInterval time.Duration
	// PublishNodeMetrics publishes the host and allocated-resource gauges
	// (telemetry.publish_node_metrics).
	PublishNodeMetrics bool
	// PublishAllocationMetrics publishes each running task's memory and
	// CPU gauges (telemetry.publish_allocation_metrics).
	PublishAllocationMetrics bool
	// DriverHealthInterval is how often drivers are fingerprinted again
	// (0: every 15 s).
	DriverHealthInterval time.Duration
	// ProcRoot is where procfs is mounted for host stats ("" is /proc).
	ProcRoot string
	// GC is the garbage collection of finished allocations (gc.go).
	GC GCConfig
	// BridgeNetworkName and BridgeNetworkSubnet configure the bridge of
	// groups in network mode "bridge" (defaults "nomad", 172.26.64.0/20).
	BridgeNetworkName   string
	BridgeNetworkSubnet string
	// HostVolumes are the client's static host volumes by name; every path
	// must exist when the client starts.
	HostVolumes map[string]HostVolume
}
