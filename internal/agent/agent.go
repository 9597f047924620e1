package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics/compat"

	"github.com/drover-project/drover/internal/agent/config"
	httpapi "github.com/drover-project/drover/internal/agent/http"
	"github.com/drover-project/drover/internal/client"
	"github.com/drover-project/drover/internal/client/servers"
	"github.com/drover-project/drover/internal/heapfloor"
	"github.com/drover-project/drover/internal/reach"
	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/server"
	"github.com/drover-project/drover/internal/tlsutil"
	"github.com/drover-project/drover/internal/version"
)

// Agent is one running `drover agent`.
type Agent struct {
	config *config.Config
	logger hclog.Logger

	server *server.Server
	client *client.Client

	pool    *droverrpc.Pool
	servers *servers.Manager // client-only agents: the servers they know
	// tls holds the tls block's material (nil when TLS is off); rpcDialer
	// dials servers' RPC ports (TLS with tls.rpc; nil: plain).
	tls       *tlsutil.Store
	rpcDialer *droverrpc.Dialer
	// nodeSession is the client's session servers reach it by (reach.go).
	nodeSession *reach.NodeSession

	httpLn  net.Listener
	httpSrv *http.Server
	httpAPI *httpapi.Handler
	inmem   *metrics.InmemSink
	// inmemSince is when inmem was created: its first interval is partial.
	inmemSince time.Time

	// joinStop ends retry_join (join.go) at shutdown; joinWG waits for it.
	joinStop chan struct{}
	joinWG   sync.WaitGroup
	// fatalCh carries an error that ends the agent (retry_join exhausted).
	fatalCh chan error

	tmpDirs []string
	// heapFloor paces the GC of a server process (nil when off).
	heapFloor *heapfloor.Tuner
	shutdown  sync.Once
	// drainOnce runs the client's drain_on_shutdown once, when it leaves,
	// before Leave stops anything.
	drainOnce sync.Once
}

// New builds an agent from a merged, validated configuration and starts it.
func New(cfg *config.Config, logger hclog.Logger) (*Agent, error) {
	if err := cfg.NormalizeAddrs(); err != nil {
		return nil, err
	}
	if cfg.NodeName == "" {
		// As Nomad: the node (and server member) name defaults to the hostname.
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("agent: no name configured and the hostname is unknown: %w", err)
		}
		cfg.NodeName = host
	}
	if cfg.Server == nil || !cfg.Server.Enabled {
		if cfg.Client == nil || !cfg.Client.Enabled {
			return nil, errors.New("agent: must run as a server (-server), a client (-client), or both (-dev)")
		}
	}
	a := &Agent{config: cfg, logger: logger, pool: droverrpc.NewPool(10 * time.Second), joinStop: make(chan struct{}), fatalCh: make(chan error, 1)}
	since := time.Now()
	inm, prom, err := setupMetrics(cfg.Telemetry, cfg.NodeName)
	if err != nil {
		return nil, err
	}
	a.inmem, a.inmemSince = inm, since

	// Bind HTTP first: a port conflict should fail before anything starts.
	a.httpLn, err = net.Listen("tcp", cfg.HTTPAddr())
	if err != nil {
		return nil, fmt.Errorf("agent: HTTP listener on %s: %w", cfg.HTTPAddr(), err)
	}
	if err := a.setupTLS(); err != nil {
		a.Shutdown()
		return nil, err
	}
	if cfg.Server != nil && cfg.Server.Enabled {
		if err := a.setupServer(); err != nil {
			a.Shutdown()
			return nil, err
		}
	}
	if cfg.Client != nil && cfg.Client.Enabled {
		if err := a.setupClient(); err != nil {
			a.Shutdown()
			return nil, err
		}
	}
	a.startHTTP(prom)
	return a, nil
}

func (a *Agent) dataDir(sub string) (string, error) {
	if a.config.DataDir != "" {
		dir := filepath.Join(a.config.DataDir, sub)
		return dir, os.MkdirAll(dir, 0o711)
	}
	if !a.config.DevMode {
		return "", errors.New("agent: data_dir is required outside -dev mode")
	}
	dir, err := os.MkdirTemp("", "drover-dev-"+sub+"-")
	if err != nil {
		return "", err
	}
	a.tmpDirs = append(a.tmpDirs, dir)
	// Traversable as a configured data dir is: a task run as its `user`
	// must reach its task directory below it.
	return dir, os.Chmod(dir, 0o711)
}

func (a *Agent) setupServer() error {
	c := a.config
	sc, err := serverConfig(c)
	if err != nil {
		return err
	}
	sc.Logger = a.logger
	a.serverTLS(sc)
	if !c.DevMode {
		dir := c.Server.DataDir
		if dir == "" {
			var err error
			if dir, err = a.dataDir("server"); err != nil {
				return err
			}
		}
		sc.DataDir = dir
		id, err := persistentID(filepath.Join(dir, "node-id"))
		if err != nil {
			return err
		}
		sc.NodeID = id
	}
	srv, err := server.NewServer(sc)
	if err != nil {
		return err
	}
	a.server = srv
	if err := a.startJoining(); err != nil {
		return err
	}
	floor := heapfloor.DefaultFloor()
	if c.Server.GCHeapFloorMB != nil {
		floor = uint64(*c.Server.GCHeapFloorMB) << 20
	}
	a.heapFloor = heapfloor.Start(floor)
	return nil
}

// serverConfig maps the agent's configuration onto the server's (without
// the data directory and node ID, which need the file system).
func serverConfig(c *config.Config) (*server.Config, error) {
	sc := server.DefaultConfig()
	sc.NodeName = c.NodeName
	sc.Region = c.Region
	sc.Datacenter = c.Datacenter
	sc.Version = version.Version
	sc.DevMode = c.DevMode
	sc.ACLEnabled = c.ACL != nil && c.ACL.Enabled
	if c.ACL != nil {
		sc.ReplicationToken = c.ACL.ReplicationToken
	}
	sc.RPCAddr = c.RPCAddr()
	sc.RPCAdvertise = c.AdvertiseRPCAddr()
	s := c.Server
	sc.AuthoritativeRegion = s.AuthoritativeRegion
	if s.BootstrapExpect > 0 {
		sc.BootstrapExpect = s.BootstrapExpect
	}
	if err := serfServerConfig(c, sc); err != nil {
		return nil, err
	}
	if s.NumSchedulers != nil && *s.NumSchedulers > 0 {
		sc.NumSchedulers = *s.NumSchedulers
	}
	if len(s.EnabledSchedulers) > 0 {
		sc.EnabledSchedulers = s.EnabledSchedulers
	}
	if c.Telemetry != nil {
		sc.StatsInterval = c.Telemetry.CollectionInterval
	}
	if s.MinHeartbeatTTL > 0 {
		sc.MinHeartbeatTTL = s.MinHeartbeatTTL
	}
	if s.MaxHeartbeatsPerSecond > 0 {
		sc.MaxHeartbeatsPerSecond = s.MaxHeartbeatsPerSecond
	}
	if s.HeartbeatGrace > 0 {
		sc.HeartbeatGrace = s.HeartbeatGrace
	}
	if s.FailoverHeartbeatTTL > 0 {
		sc.FailoverHeartbeatTTL = s.FailoverHeartbeatTTL
	}
	if s.RaftSnapshotThreshold != nil && *s.RaftSnapshotThreshold > 0 {
		sc.RaftSnapshotThreshold = uint64(*s.RaftSnapshotThreshold)
	}
	if s.RaftSnapshotInterval > 0 {
		sc.RaftSnapshotInterval = s.RaftSnapshotInterval
	}
	if s.RaftTrailingLogs != nil && *s.RaftTrailingLogs > 0 {
		sc.RaftTrailingLogs = uint64(*s.RaftTrailingLogs)
	}
	if s.JobMaxSourceSize != "" {
		sc.JobMaxSourceSize, _ = config.ParseSize(s.JobMaxSourceSize) // checked by Validate
	}
	if s.RaftBoltDB != nil {
		sc.RaftNoFreelistSync = s.RaftBoltDB.NoFreelistSync
	}
	if s.JobMaxCount != nil {
		sc.JobMaxCount = *s.JobMaxCount
		if sc.JobMaxCount == 0 {
			sc.JobMaxCount = -1 // job_max_count = 0 turns the limit off
		}
	}
	if s.EventBufferSize != nil {
		sc.EventBufferSize = *s.EventBufferSize
	}
	if s.DeploymentQueryRateLimit > 0 {
		sc.DeploymentQueryRateLimit = s.DeploymentQueryRateLimit
	}
	sc.GC = server.GCConfig{Interval: s.JobGCInterval, JobThreshold: s.JobGCThreshold, EvalThreshold: s.EvalGCThreshold,
		BatchEvalThreshold: s.BatchEvalGCThreshold, DeploymentThreshold: s.DeploymentGCThreshold, NodeThreshold: s.NodeGCThreshold}
	if s.EnableEventBroker != nil && !*s.EnableEventBroker {
		sc.DisableEventBroker = true
	}
	if d := s.DefaultSchedulerConfig; d != nil {
		// Stored by the first leader when the cluster has no scheduler
		// configuration yet; the operator API changes it from then on.
		if d.SchedulerAlgorithm != "" {
			sc.SchedulerAlgorithm = d.SchedulerAlgorithm
		}
		sc.MemoryOversubscriptionEnabled = d.MemoryOversubscriptionEnabled
		sc.RejectJobRegistration = d.RejectJobRegistration
		sc.PauseEvalBroker = d.PauseEvalBroker
		if p := d.PreemptionConfig; p != nil {
			setBool(&sc.PreemptionSystemEnabled, p.SystemSchedulerEnabled)
			setBool(&sc.PreemptionSysBatchEnabled, p.SysBatchSchedulerEnabled)
			setBool(&sc.PreemptionBatchEnabled, p.BatchSchedulerEnabled)
			setBool(&sc.PreemptionServiceEnabled, p.ServiceSchedulerEnabled)
		}
	}
	return sc, nil
}

// persistentID reads an ID from path, creating it the first time.
func persistentID(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	}
	id := uuid.NewString()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return id, os.WriteFile(path, []byte(id), 0o600)
}

// Server returns the agent's server (nil on client-only agents).
func (a *Agent) Server() *server.Server { return a.server }

// Client returns the agent's client (nil on server-only agents).
func (a *Agent) Client() *client.Client { return a.client }

// HTTPAddr is the address the HTTP API listens on.
func (a *Agent) HTTPAddr() string { return a.httpLn.Addr().String() }

// Leave prepares a graceful departure: the client stops every task it runs
// and reports their final states (leave_on_interrupt, leave_on_terminate).
// Call Shutdown after it.
func (a *Agent) Leave() {
	a.drainSelf()
	if a.client != nil {
		a.logger.Info("leaving: stopping every task this client runs")
		a.client.Leave()
	}
	if a.server != nil {
		a.logger.Info("leaving: this server leaves the gossip pool and Raft")
		a.server.Leave()
	}
}

// Hurry makes a shutdown in progress quick (the agent was told twice):
// the client abandons its drain on shutdown and waits no shutdown_delay;
// its tasks are still stopped as the shutdown says.
func (a *Agent) Hurry() {
	if a.client != nil {
		a.client.Hurry()
	}
}

// drainSelf drains the client's node first when client.drain_on_shutdown
// is set (once, when leaving; the servers must still be reachable).
func (a *Agent) drainSelf() {
	a.drainOnce.Do(func() {
		if a.client == nil {
			return
		}
		if err := a.client.DrainSelf(); err != nil {
			a.logger.Warn("drain on shutdown", "error", err)
		}
	})
}

// Shutdown stops the client (its tasks keep running outside dev mode), the
// HTTP API and the server, in that order. It drains nothing: as Nomad, a
// client with drain_on_shutdown drains its node only when it leaves
// (Leave: leave_on_interrupt, leave_on_terminate), so that a restart with
// the signal that does not leave keeps the node's tasks and eligibility.
func (a *Agent) Shutdown() error {
	var err error
	a.shutdown.Do(func() {
		if a.nodeSession != nil {
			a.nodeSession.Close()
		}
		if a.servers != nil {
			a.servers.Stop() // a call retrying while no server answers gives up
		}
		close(a.joinStop)
		a.joinWG.Wait()
		if a.client != nil {
			if cerr := a.client.Shutdown(); cerr != nil {
				err = cerr
			}
		}
		streamed := false
		if a.server != nil && a.server.Events() != nil && a.httpAPI != nil {
			// Event streams end with a last line, not a cut connection.
			a.server.Events().Close()
			open, _ := a.httpAPI.DrainEventStreams(time.Second)
			streamed = open > 0
		}
		if a.httpSrv != nil {
			if streamed {
				// The streams' handlers have returned; let net/http
				// write the end of their responses (their connections
				// then go idle) before connections are closed. Other
				// requests still running hold this up to its timeout.
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				_ = a.httpSrv.Shutdown(ctx)
				cancel()
			}
			a.httpSrv.Close()
		} else if a.httpLn != nil {
			a.httpLn.Close()
		}
		if a.server != nil {
			if serr := a.server.Shutdown(); serr != nil && err == nil {
				err = serr
			}
		}
		a.pool.Shutdown()
		a.heapFloor.Stop()
		for _, d := range a.tmpDirs {
			os.RemoveAll(d)
		}
	})
	return err
}

// setBool sets *dst from an optional config value.
func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}
