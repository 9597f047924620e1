package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/fsm"
	"github.com/drover-project/drover/internal/reach"
	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/server/blockedevals"
	"github.com/drover-project/drover/internal/server/deploywatch"
	"github.com/drover-project/drover/internal/server/drainer"
	"github.com/drover-project/drover/internal/server/evalbroker"
	"github.com/drover-project/drover/internal/server/heartbeat"
	"github.com/drover-project/drover/internal/server/periodic"
	"github.com/drover-project/drover/internal/server/planqueue"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Server is one Drover server.
type Server struct {
	config *Config
	logger hclog.Logger

	// reach holds the client agents' sessions (reach.go).
	reach *reach.Hub

	// waits ends clients' blocking pulls (wait_slots.go).
	waits waitSlots

	// namespaceACL filters lists across namespaces by token
	// (namespace_access.go); nil allows every namespace.
	namespaceACL func(token string) (func(ns string) bool, error)
	// nodePoolACL filters the node pool list by token (namespace_access.go);
	// nil allows every pool.
	nodePoolACL func(token string) (func(pool string) bool, error)

	// encrypter seals variables with the keyring's keys (encrypter.go).
	encrypter encrypter
	// keystore holds the root keys' material (keystore.go); keyWant wakes
	// the fetch of material this server lacks (keyring_fetch.go).
	keystore   *keystore
	keyWant    chan struct{}
	keyFetches keyFetches
	// varLocks holds the TTL timers of variable locks on the leader.
	varLocks varLocks

	fsm  *fsm.FSM
	raft *raft.Raft
	// raftProtocol is the Raft protocol version this server speaks.
	raftProtocol raft.ProtocolVersion
	raftStore    interface{ Close() error }
	raftLayer    *droverrpc.RaftLayer

	rpcServer *rpc.Server
	listener  *droverrpc.Listener
	pool      *droverrpc.Pool
	rpcAddr   string // advertised RPC (and Raft) address

	// gossip is serf LAN membership (serf.go); nil when SerfBindAddr is
	// empty (in-process tests). bootstrapped is set once Raft has a
	// configuration, by bootstrap_expect or found on disk.
	gossip       *serfState
	bootstrapped atomic.Bool
	// autopilot runs on the leader (autopilot.go); nil without gossip.
	autopilot   *autopilot.Autopilot
	autopilotMu sync.Mutex

	broker     *evalbroker.Broker
	events     *events.Broker // nil when the event stream is disabled
	blocked    *blockedevals.BlockedEvals
	planQueue  *planqueue.PlanQueue
	heartbeats *heartbeat.Timers
	// drainer moves allocations off draining nodes while this server leads.
	drainer    *drainer.Drainer
	allocBatch *allocUpdateBatcher
	periodic   *periodic.Dispatcher
	// deployWatcher is the leader-only deployment watcher.
	deployWatcher *deploywatch.Watcher

	// brokerMu serialises turning the broker and blocked evals on and off
	// for PauseEvalBroker with leadership changes.
	brokerMu sync.Mutex

	// workers are the scheduler workers and the slots and start permits
	// that pace them, resizable at runtime (worker_pool.go).
	workers *workerPool
	// waitingPlaced counts the allocations in plans whose workers wait for
	// the commit without a slot (worker.go, maxWaitingPlaced).
	waitingPlaced atomic.Int64

	// ready is set once the state store holds everything committed before
	// this server started (ready.go); startIndex is the last index of the
	// Raft log (or snapshot) found on disk at start.
	ready      atomic.Bool
	startIndex uint64

	// leadership
	isLeader               atomic.Bool
	leaderGen              atomic.Uint64  // bumps on every establish; guards stale goroutines
	establishCount         atomic.Int64   // times leader services were started (tests)
	servicesUp             atomic.Int32   // 1 while leader services run here (tests)
	leaderTasks            atomic.Int32   // leader-only goroutines running here (tests)
	leaderWG               sync.WaitGroup // the leader-only goroutines (waitLeaderTasks)
	lastCommittedPlanIndex atomic.Uint64
	planApplyMu            sync.Mutex // held by the running plan applier
	evalUpdates            *evalUpdateBatcher
	jobRegs                *jobRegisterBatcher
	// coreGCMu runs one garbage collection at a time (core_gc.go).
	coreGCMu sync.Mutex
	// acls caches token resolutions (acl_resolve.go).
	acls aclCache
	// aclRepl is the ACL replication's status (acl_replication.go).
	aclRepl aclReplState
	// oidc holds the OIDC logins started here (acl_oidc.go).
	oidc oidcPending

	// reassertCh asks the leadership monitor to restart the leader
	// services from the current state (snapshot_ops.go).
	reassertCh chan struct{}

	shutdownCh chan struct{}
	// shutdownCtx is cancelled with shutdownCh closing (calls forwarded
	// to the leader end with it).
	shutdownCtx    context.Context
	shutdownCancel context.CancelFunc
	shutdownOnce   sync.Once
	wg             sync.WaitGroup
}

// NewServer builds and starts a server: Raft, RPC, workers and the
// leadership monitor.
func NewServer(cfg *Config) (*Server, error) {
	cfg.fill()
	if cfg.NodeID == "" {
		cfg.NodeID = uuid.NewString()
	}
	if cfg.NodeName == "" {
		cfg.NodeName = cfg.NodeID[:8]
	}
	s := &Server{
		config:     cfg,
		logger:     cfg.Logger.Named("server"),
		rpcServer:  rpc.NewServer(),
		pool:       droverrpc.NewPool(10 * time.Second),
		shutdownCh: make(chan struct{}),
		reassertCh: make(chan struct{}, 1),
	}
	s.shutdownCtx, s.shutdownCancel = context.WithCancel(context.Background())

	s.varLocks.expire = s.expireVarLock

	s.broker = evalbroker.New(evalbroker.Config{
		NackTimeout:         cfg.EvalNackTimeout,
		InitialNackDelay:    time.Second,
		SubsequentNackDelay: 20 * time.Second,
		DeliveryLimit:       cfg.EvalDeliveryLimit,
		Logger:              s.logger.Named("broker"),
		Clock:               cfg.brokerClock,
	})
	s.blocked = blockedevals.New(s.broker, s.logger.Named("blocked_evals"))
	s.planQueue = planqueue.New()
	s.heartbeats = heartbeat.New(heartbeat.Config{
		MinTTL:       cfg.MinHeartbeatTTL,
		MaxPerSecond: cfg.MaxHeartbeatsPerSecond,
		Grace:        cfg.HeartbeatGrace,
		FailoverTTL:  cfg.FailoverHeartbeatTTL,
		Clock:        cfg.HeartbeatClock,
	}, s.heartbeatsExpired)
	allocWindow := 50 * time.Millisecond
	if cfg.allocBatchWindow > 0 {
		allocWindow = cfg.allocBatchWindow
	}
	s.allocBatch = newAllocUpdateBatcher(s, allocWindow)
	s.evalUpdates = newEvalUpdateBatcher(s)
	s.jobRegs = newJobRegisterBatcher(s)
	s.periodic = s.newPeriodicDispatcher()
	s.deployWatcher = s.newDeploymentWatcher()
	s.drainer = drainer.New(s.State, drainRaft{s}, s.logger.Named("drainer"))

	ksDir := ""
	if !cfg.DevMode && cfg.DataDir != "" {
		ksDir = filepath.Join(cfg.DataDir, "keystore")
	}
	ks, err := openKeystore(ksDir)
	if err != nil {
		return nil, err
	}
	s.keystore, s.encrypter.ks = ks, ks
	s.keyWant = make(chan struct{}, 1)

	fcfg := fsm.Config{Logger: s.logger.Named("fsm"), Sink: &leaderSink{s: s}, TimeTableGranularity: cfg.GC.TimeGranularity,
		Keyring: keyringHook{s}}
	if !cfg.DisableEventBroker {
		size := cfg.EventBufferSize
		if size <= 0 {
			size = events.DefaultBufferSize
		}
		// Every server has its own: each applies every entry.
		s.events = events.NewBroker(size)
		fcfg.Events = s.events
	}
	f, err := fsm.New(fcfg)
	if err != nil {
		return nil, err
	}
	s.fsm = f
	if cfg.ACLEnabled {
		// Lists across namespaces keep what the token may read.
		s.namespaceACL = func(token string) (func(string) bool, error) {
			_, a, err := s.resolveToken(token)
			if err != nil {
				return nil, err
			}
			return a.AllowNamespace, nil
		}
	}

	if err := s.registerEndpoints(); err != nil {
		return nil, err
	}
	if err := s.setupRPCListener(); err != nil {
		return nil, err
	}
	if err := s.setupRaft(); err != nil {
		s.listener.Close()
		return nil, err
	}
	// Only now: an RPC arriving earlier (a client retrying while this server
	// starts) would find no Raft to ask for the leader. Connections made
	// meanwhile wait in the listen backlog.
	go s.listener.Serve()
	if cfg.SerfBindAddr != "" {
		if err := s.setupSerf(); err != nil {
			s.Shutdown()
			return nil, err
		}
		s.setupAutopilot()
	}

	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.monitorLeadership()
	}()
	go func() {
		defer s.wg.Done()
		s.fetchKeyMaterial()
	}()
	// NumSchedulers evaluations are computed at once (the pool's slots);
	// more workers than that run so that those waiting on the plan
	// applier's commit do not leave the slots idle.
	s.workers = newWorkerPool(s, cfg.NumSchedulers, cfg.EnabledSchedulers)
	s.allocBatch.start()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.evalUpdates.run()
	}()
	go func() {
		defer s.wg.Done()
		s.jobRegs.run()
	}()
	return s, nil
}

func (s *Server) setupRPCListener() error {
	ln := s.config.RPCListener
	if ln == nil {
		addr := s.config.RPCAddr
		if addr == "" {
			addr = "127.0.0.1:4647"
		}
		var err error
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("server: listening for RPC on %s: %w", addr, err)
		}
	}
	s.rpcAddr = s.config.RPCAdvertise
	if s.rpcAddr == "" {
		s.rpcAddr = ln.Addr().String()
	}
	adv, err := net.ResolveTCPAddr("tcp", s.rpcAddr)
	if err != nil {
		return fmt.Errorf("server: bad RPC advertise address %q: %w", s.rpcAddr, err)
	}
	if s.config.RaftTransport == nil {
		s.raftLayer = droverrpc.NewRaftLayer(adv)
	}
	// Serving starts in NewServer once Raft is set up: endpoints read it.
	s.listener = droverrpc.NewListener(ln, s.rpcServer, s.raftLayer, s.logger.Named("rpc"))
	if s.config.RPCTLS != nil {
		s.listener.SetTLS(s.config.RPCTLS)
	}
	s.listener.SetAuthorizer(s.authorizeRPC)
	if d := s.config.RPCDialer; d != nil {
		s.pool.SetDialer(d)
		if s.raftLayer != nil {
			s.raftLayer.SetDialer(d)
		}
	}
	s.setupReach()
	return nil
}

// endpoints are the RPC endpoints by service name.
func (s *Server) endpoints() map[string]any {
	return map[string]any{
		"Job":                 &Job{s},
		"Node":                &Node{s},
		"Eval":                &Eval{s},
		"Alloc":               &Alloc{s},
		"Plan":                &Plan{s},
		"Status":              &Status{s},
		"Keyring":             &Keyring{s},
		"Deployment":          &Deployment{s},
		"Region":              &Region{s},
		"Namespace":           &Namespace{s},
		"NodePool":            &NodePool{s},
		"Periodic":            &Periodic{s},
		"Operator":            &Operator{s},
		"Scaling":             &Scaling{s},
		"Event":               &Event{s},
		"System":              &System{s},
		"ACL":                 &ACL{s},
		"Variables":           &Variables{s},
		"ServiceRegistration": &ServiceRegistration{s},
	}
}

func (s *Server) registerEndpoints() error {
	for name, ep := range s.endpoints() {
		if err := s.rpcServer.RegisterName(name, ep); err != nil {
			return fmt.Errorf("server: registering %s endpoint: %w", name, err)
		}
	}
	return nil
}

// RPC calls an endpoint of this server in-process (forwarding to the leader
// happens inside the endpoint when needed).
func (s *Server) RPC(method string, args, reply any) error {
	return droverrpc.InmemCall(s.rpcServer, method, args, reply)
}

// State returns the current state store.
func (s *Server) State() *state.StateStore { return s.fsm.State() }

// Events is the server's event stream broker; nil when
// server.enable_event_broker is false.
func (s *Server) Events() *events.Broker { return s.events }

// IsLeader reports whether this server leads and runs the leader services.
func (s *Server) IsLeader() bool { return s.isLeader.Load() }

// RPCAddr is this server's advertised RPC address.
func (s *Server) RPCAddr() string { return s.rpcAddr }

// Region is the server's region.
func (s *Server) Region() string { return s.config.Region }

// Raft exposes the Raft instance (operators, tests).
func (s *Server) Raft() *raft.Raft { return s.raft }

// LeaderAddr returns the leader's RPC address, or "" when unknown.
func (s *Server) LeaderAddr() string {
	addr, _ := s.raft.LeaderWithID()
	return string(addr)
}

// Peers lists the Raft voters' addresses.
func (s *Server) Peers() ([]string, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var out []string
	for _, srv := range f.Configuration().Servers {
		out = append(out, string(srv.Address))
	}
	return out, nil
}

// Shutdown stops everything.
func (s *Server) Shutdown() error {
	var err error
	s.shutdownOnce.Do(func() {
		close(s.shutdownCh)
		s.shutdownCancel()
		if s.workers != nil {
			s.workers.close()
		}
		if s.events != nil {
			s.events.Close()
		}
		s.allocBatch.stop()
		s.shutdownSerf()
		s.revokeLeadership()
		if s.raft != nil {
			if ferr := s.raft.Shutdown().Error(); ferr != nil {
				err = ferr
			}
		}
		if s.raftStore != nil {
			s.raftStore.Close()
		}
		if s.listener != nil {
			s.listener.Close()
		}
		s.reach.Close()
		s.pool.Shutdown()
		s.wg.Wait()
	})
	return err
}

// raftApply writes one entry and waits for it to be applied. The FSM's
// return value, when an error, is returned as the error.
func (s *Server) raftApply(t structs.MessageType, msg any) (any, uint64, error) {
	f := s.raftApplyAsync(t, msg)
	idx, err := f.Wait()
	return f.resp, idx, err
}

// raftFuture is a Raft entry submitted by raftApplyAsync.
type raftFuture struct {
	f        raft.ApplyFuture
	err      error // encoding failed; f is nil
	resp     any
	shutdown <-chan struct{} // the server's shutdownCh
	// hook, set by tests (Config.applyErrHook), replaces Raft's answer for
	// the entry: it injects a leadership loss after the append.
	hook func(error) error
}

// applyError says what Raft's answer to an Apply means for the writer.
// raft.ErrNotLeader and raft.ErrEnqueueTimeout come before the entry is
// appended: the write never reached the log, and ErrNoLeader tells callers
// to send it again (to the next leader). raft.ErrLeadershipLost and
// raft.ErrAbortedByRestore come after: another leader may still commit the
// entry, so the outcome is unknown and a blind retry could apply the write
// twice (a job registered as two versions, an evaluation created twice).
func applyError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout):
		return structs.ErrNoLeader
	case errors.Is(err, raft.ErrLeadershipLost):
		return structs.ErrLeadershipLost
	case errors.Is(err, raft.ErrAbortedByRestore):
		return structs.ErrRestoredWhileCommitting
	case errors.Is(err, raft.ErrRaftShutdown):
		return structs.NewErrOutcomeUnknown("server shut down while committing log")
	}
	return err
}

// raftApplyAsync encodes msg and hands it to Raft without waiting for the
// commit; Wait on the result does.
func (s *Server) raftApplyAsync(t structs.MessageType, msg any) *raftFuture {
	buf, err := structs.Encode(t, msg)
	if err != nil {
		return &raftFuture{err: fmt.Errorf("encoding raft entry: %w", err)}
	}
	// Once committed, an entry the FSM cannot decode would be skipped by
	// every server and its writer told only "apply failed": refuse it now.
	if err := structs.CheckEntryDepth(buf[1:]); err != nil {
		return &raftFuture{err: structs.NewErrCoded(400, "refusing to write a Raft entry the servers could not read back: %v", err)}
	}
	f := &raftFuture{f: s.raft.Apply(buf, 30*time.Second), shutdown: s.shutdownCh}
	if h := s.config.applyErrHook; h != nil {
		f.hook = func(err error) error { return h(t, err) }
	}
	return f
}

// Wait blocks until the entry is applied and returns its index; an error the
// FSM returned for it is returned too (with the index).
func (r *raftFuture) Wait() (uint64, error) {
	if r.err != nil {
		return 0, r.err
	}
	// Raft never answers an entry still queued in its (buffered) apply
	// channel when it shuts down, so waiting on the future alone could
	// hang a worker, and with it the server's Shutdown, for ever.
	done := make(chan error, 1)
	go func() { done <- r.f.Error() }()
	var err error
	select {
	case err = <-done:
	case <-r.shutdown:
		select {
		case err = <-done:
		default:
			// The entry may be in the log already: the servers that
			// remain can still commit it.
			return 0, structs.NewErrOutcomeUnknown("server shut down while committing log")
		}
	}
	if r.hook != nil {
		err = r.hook(err)
	}
	if err != nil {
		return 0, applyError(err)
	}
	resp := r.f.Response()
	if rerr, ok := resp.(error); ok && rerr != nil {
		return r.f.Index(), rerr
	}
	r.resp = resp
	return r.f.Index(), nil
}

func (s *Server) isShutdown() bool {
	select {
	case <-s.shutdownCh:
		return true
	default:
		return false
	}
}

// ID is this server's Raft ID.
func (s *Server) ID() string { return s.config.NodeID }
