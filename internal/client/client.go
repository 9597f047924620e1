package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/client/bridgenet"
	"github.com/drover-project/drover/internal/client/cpuset"
	"github.com/drover-project/drover/internal/client/fingerprint"
	"github.com/drover-project/drover/internal/client/hoststats"
	"github.com/drover-project/drover/internal/client/state"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// Client is the client agent.
type Client struct {
	// taskAPI is what tasks reach on secrets/api.sock (wiring.go).
	taskAPI taskAPIHandler

	cfg    Config
	logger hclog.Logger
	now    func() time.Time

	// bridge sets up bridge-mode allocation networks (network.go); nil
	// when this node cannot, bridgeReason says why.
	bridge       *bridgenet.Manager
	bridgeReason string

	// allocMetricsBusy: a pass of publishAllocMetrics is running.
	allocMetricsBusy atomic.Bool

	nodeMu sync.RWMutex
	node   *structs.Node
	// metaStatic is the configured node meta (with Nomad's defaults) and
	// metaDynamic the meta set through the API (nil values unset keys);
	// node.Meta is their merge. Both are guarded by nodeMu.
	metaStatic  map[string]string
	metaDynamic map[string]*string
	// metaMu serialises meta updates; registerMu serialises Node.Register
	// calls so that an older copy of the node never lands after a newer one.
	metaMu     sync.Mutex
	registerMu sync.Mutex

	// drivers are the detected drivers; replaced (never changed in place)
	// under driversMu when a driver is detected later.
	driversMu sync.RWMutex
	drivers   map[string]drivers.Driver

	// registered is closed after the first successful Node.Register.
	registered     chan struct{}
	registeredOnce sync.Once
	// serversContacted is closed after the first successful alloc pull.
	serversContacted     chan struct{}
	serversContactedOnce sync.Once
	// reregister asks the heartbeat loop to register again.
	reregister chan struct{}

	// identity is the node identity the servers signed last (identity.go).
	identity signedIdentity

	allocMu sync.RWMutex
	allocs  map[string]*allocrunner.AllocRunner
	// allocIndex is the AllocModifyIndex of the local copy of each alloc.
	allocIndex map[string]uint64
	// migrateTokens are the servers' tokens for fetching previous
	// allocations from other nodes, by new allocation ID, until used
	// (migrate_remote.go).
	migrateTokens map[string]string

	sync *allocSync
	// hbStop is the last successful heartbeat, for stop_on_client_after
	// (heartbeatstop.go).
	hbStop *heartbeatStop
	// state persists allocations and task handles (nil in dev mode).
	state *state.DB
	// host samples the host for /v1/client/stats and the host gauges.
	host *hoststats.Collector
	// cpusets keeps the tasks without reserved cores off the cores other
	// tasks reserved (package cpuset).
	cpusets *cpuset.Manager

	shutdownCh   chan struct{}
	shutdownOnce sync.Once
	// hurryCh is closed by Hurry (hurry.go).
	hurryCh   chan struct{}
	hurryOnce sync.Once
	wg        sync.WaitGroup
	startOnce sync.Once
}

// New fingerprints the node and prepares the client; Start runs it.
func New(cfg Config) (*Client, error) {
	if cfg.RPC == nil {
		return nil, errors.New("client: no RPCer")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if err := checkHostVolumes(cfg.HostVolumes); err != nil {
		return nil, err
	}
	if cfg.DataDir == "" && (cfg.StateDir == "" || cfg.AllocDir == "") {
		if !cfg.DevMode {
			return nil, errors.New("client: data_dir is required outside dev mode")
		}
		d, err := os.MkdirTemp("", "drover-client-")
		if err != nil {
			return nil, err
		}
		cfg.DataDir = d
	}
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(cfg.DataDir, "client")
	}
	if cfg.AllocDir == "" {
		cfg.AllocDir = filepath.Join(cfg.DataDir, "alloc")
	}
	for _, d := range []string{cfg.StateDir, cfg.AllocDir} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
	}
	if cfg.Region == "" {
		cfg.Region = structs.DefaultRegion
	}
	if cfg.Datacenter == "" {
		cfg.Datacenter = structs.DefaultDatacenter
	}
	if cfg.NodePool == "" {
		cfg.NodePool = structs.DefaultNodePool
	}
	c := &Client{
		cfg:              cfg,
		logger:           cfg.Logger.Named("client"),
		now:              cfg.Clock,
		drivers:          map[string]drivers.Driver{},
		registered:       make(chan struct{}),
		serversContacted: make(chan struct{}),
		reregister:       make(chan struct{}, 1),
		allocs:           map[string]*allocrunner.AllocRunner{},
		allocIndex:       map[string]uint64{},
		shutdownCh:       make(chan struct{}),
		hurryCh:          make(chan struct{}),
	}
	c.sync = newAllocSync(c)
	if err := c.setupBridge(); err != nil {
		return nil, err
	}
	c.hbStop = newHeartbeatStop(cfg.StateDir, cfg.DevMode, c.now())
	c.host = &hoststats.Collector{ProcRoot: cfg.ProcRoot, AllocDir: cfg.AllocDir}
	id, secret, err := nodeIdentity(cfg.StateDir, cfg.DevMode)
	if err != nil {
		return nil, err
	}
	c.metaStatic, c.metaDynamic = staticNodeMeta(cfg.Meta), map[string]*string{}
	if !cfg.DevMode {
		if c.metaDynamic, err = loadNodeMeta(cfg.StateDir); err != nil {
			return nil, err
		}
	}
	if c.state, err = openState(cfg); err != nil {
		return nil, err
	}
	c.node = c.buildNode(id, secret)
	// Tasks without reserved cores share the usable cores: the reservable
	// ones less the operator's reserved cores.
	c.cpusets = cpuset.NewManager(cpuset.New(c.node.ReservableCores()...), c.logger)
	if nr := c.node.NodeResources; nr != nil {
		c.host.TotalCompute = float64(nr.Cpu.CpuShares)
	}
	return c, nil
}

// nodeIdentity loads the node ID and secret from StateDir/client-id and
// StateDir/secret-id, creating them the first time (dev: random each time).
func nodeIdentity(stateDir string, dev bool) (string, string, error) {
	if dev {
		return uuid.NewString(), uuid.NewString(), nil
	}
	load := func(name string) (string, error) {
		p := filepath.Join(stateDir, name)
		b, err := os.ReadFile(p)
		if err == nil {
			if id := strings.TrimSpace(string(b)); id != "" {
				if _, err := uuid.Parse(id); err != nil {
					return "", fmt.Errorf("client: %s holds an invalid ID: %w", p, err)
				}
				return id, nil
			}
		} else if !os.IsNotExist(err) {
			return "", err
		}
		id := uuid.NewString()
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, []byte(id), 0o600); err != nil {
			return "", err
		}
		return id, os.Rename(tmp, p)
	}
	id, err := load("client-id")
	if err != nil {
		return "", "", err
	}
	secret, err := load("secret-id")
	return id, secret, err
}

func (c *Client) buildNode(id, secret string) *structs.Node {
	cfg := c.cfg
	name := cfg.Name
	if name == "" {
		name, _ = os.Hostname()
	}
	n := &structs.Node{
		ID: id, SecretID: secret, Name: name, Datacenter: cfg.Datacenter, NodeClass: cfg.NodeClass,
		NodePool: cfg.NodePool, Meta: mergeNodeMeta(c.metaStatic, c.metaDynamic), Status: structs.NodeStatusInit,
		SchedulingEligibility: structs.NodeSchedulingEligible, TLSEnabled: cfg.TLSEnabled,
		HostVolumes: hostVolumesOf(cfg.HostVolumes),
	}
	var deny []string
	if d := cfg.Options["fingerprint.denylist"]; d != "" {
		deny = strings.Split(d, ",")
	}
	fingerprint.Node(fingerprint.Config{
		AllocDir: cfg.AllocDir, NetworkInterface: cfg.NetworkInterface, BindAddr: cfg.BindAddr,
		CPUTotalCompute: cfg.CPUTotalCompute, ReservableCores: cfg.ReservableCores, MemoryTotalMB: cfg.MemoryTotalMB,
		MinDynamicPort: cfg.MinDynamicPort, MaxDynamicPort: cfg.MaxDynamicPort,
		Reserved: fingerprint.Reserved(cfg.Reserved), Denylist: deny, Version: cfg.Version,
		DevMode: cfg.DevMode, Logger: c.logger,
	}, n)
	if cfg.HTTPAddr != "" {
		n.HTTPAddr = cfg.HTTPAddr
	} else if ip := n.Attributes["unique.network.ip-address"]; ip != "" {
		n.HTTPAddr = ip + ":4646"
	}
	fingerprint.Drivers(n, offeredDrivers(cfg.Drivers, cfg.Options), c.now())
	fingerprint.Devices(n, cfg.Devices.Fingerprint())
	if c.bridge != nil {
		// As Nomad's CNI fingerprint names the bridge plugin it found; the
		// plugin here is built in, so its version is the agent's.
		n.Attributes[BridgeAttribute] = cfg.Version
		if n.Attributes[BridgeAttribute] == "" {
			n.Attributes[BridgeAttribute] = "1"
		}
	}
	for _, d := range cfg.Drivers {
		if info := n.Drivers[d.Name()]; info != nil && info.Detected {
			c.drivers[d.Name()] = d
		}
	}
	if cfg.DetectForeignPorts {
		// Register already knowing the ports others hold, so nothing can be
		// placed on them in the window before the first periodic scan.
		if ports, err := fingerprint.ForeignPorts("", nodeAddresses(n), nil); err == nil {
			n.ForeignPorts = ports
		} else {
			c.logger.Warn("foreign port scan failed", "error", err)
		}
	}
	n.ComputeClass()
	return n
}

// NodeID is this node's ID.
func (c *Client) NodeID() string {
	c.nodeMu.RLock()
	defer c.nodeMu.RUnlock()
	return c.node.ID
}

func (c *Client) secretID() string {
	c.nodeMu.RLock()
	defer c.nodeMu.RUnlock()
	return c.node.SecretID
}

// NodeSecret is the node's secret ID, the agent's own authority on the
// servers' RPC port.
func (c *Client) NodeSecret() string { return c.secretID() }

// Node returns a copy of the node as last fingerprinted/registered.
func (c *Client) Node() *structs.Node {
	c.nodeMu.RLock()
	defer c.nodeMu.RUnlock()
	return c.node.Copy()
}

// Start runs registration, heartbeats, the alloc watcher and the status
// sync. Idempotent.
func (c *Client) Start() {
	c.startOnce.Do(func() {
		c.restoreState()
		// A client away longer than a group's stop_on_client_after stops
		// those allocations before anything else (heartbeatstop.go).
		c.stopSilentAllocs()
		c.wg.Add(4)
		go func() { defer c.wg.Done(); c.watchHeartbeatStop() }()
		go func() { defer c.wg.Done(); c.registerAndHeartbeat() }()
		go func() { defer c.wg.Done(); c.watchAllocations() }()
		go func() { defer c.wg.Done(); c.sync.run() }()
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.runGC() }() // gc.go
		if c.cfg.StatsInterval > 0 {
			c.wg.Add(1)
			go func() { defer c.wg.Done(); c.emitStats() }()
		}
		if c.cfg.DetectForeignPorts {
			c.wg.Add(1)
			go func() { defer c.wg.Done(); c.watchForeignPorts() }()
		}
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.watchDriverHealth() }()
	})
}

// Shutdown stops the client's loops. Outside dev mode the tasks keep
// running (Nomad's default): every runner lets go of its tasks, whose
// handles are in the state database for the next client process to
// re-attach. In dev mode, where nothing is persisted, every task is stopped
// and its directory removed. (Leave stops the tasks of a non-dev client.)
func (c *Client) Shutdown() error {
	c.shutdownOnce.Do(func() { close(c.shutdownCh) })
	c.wg.Wait()
	runners := c.runners()
	var wg sync.WaitGroup
	for _, ar := range runners {
		wg.Add(1)
		if c.cfg.DevMode {
			go func() { defer wg.Done(); ar.Shutdown() }()
		} else {
			go func() { defer wg.Done(); ar.Detach() }()
		}
	}
	wg.Wait()
	if err := c.state.Close(); err != nil {
		c.logger.Warn("failed to close client state", "error", err)
	}
	if c.cfg.DevMode {
		for _, ar := range runners {
			if err := ar.AllocDir().Destroy(); err != nil {
				c.logger.Warn("failed to remove alloc dir", "alloc_id", ar.ID(), "error", err)
			}
		}
	}
	return nil
}

// shuttingDown reports whether Shutdown was called.
func (c *Client) shuttingDown() bool {
	select {
	case <-c.shutdownCh:
		return true
	default:
		return false
	}
}

// sleep waits d or until shutdown; false on shutdown.
func (c *Client) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.shutdownCh:
		return false
	}
}

// getAllocRunner returns the runner of an allocation on this node.
func (c *Client) getAllocRunner(allocID string) (*allocrunner.AllocRunner, error) {
	c.allocMu.RLock()
	defer c.allocMu.RUnlock()
	ar, ok := c.allocs[allocID]
	if !ok {
		return nil, structs.NewErrCoded(404, "unknown allocation ID %q", allocID)
	}
	return ar, nil
}

// Allocs returns the allocations this client runs, with their observed
// state.
func (c *Client) Allocs() []*structs.Allocation {
	c.allocMu.RLock()
	defer c.allocMu.RUnlock()
	out := make([]*structs.Allocation, 0, len(c.allocs))
	for _, ar := range c.allocs {
		out = append(out, ar.Alloc())
	}
	return out
}

// HasAlloc reports whether this client runs (or keeps) the allocation.
func (c *Client) HasAlloc(allocID string) bool {
	_, err := c.getAllocRunner(allocID)
	return err == nil
}
