package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/internal/rpc"
)

// Config describes the simulated fleet. Zero fields take the defaults
// documented on each field.
type Config struct {
	Servers    []string // RPC addresses (host:port); required
	Nodes      int      // number of simulated nodes; required
	Conns      int      // Pools (TCP connections) per server address; default 1 per 1,000 nodes, at least 1
	Region     string   // default "global"
	Datacenter string   // default "dc1"
	NamePrefix string   // node names are NamePrefix-<index>; default "sim"

	CPU      int64 // MHz per node; default 8000
	MemoryMB int64 // default 16384
	DiskMB   int64 // default 100000

	RunDelay      time.Duration // arrival -> reported running; default 100ms
	BatchDuration time.Duration // batch allocs: running -> complete; default 1s
	SyncInterval  time.Duration // a node's status updates are batched this long; default 200ms
	// HealthyAfter is how long an allocation of a deployment runs before
	// the node reports it healthy (a real client's min_healthy_time); 0
	// reports health with the running update.
	HealthyAfter time.Duration
	MaxInFlight  int // concurrent registrations and status pushes; default 256

	// Logf reports unexpected errors; nil discards them.
	Logf func(format string, args ...any)
}

func (c *Config) defaults() {
	if c.Conns <= 0 {
		c.Conns = max(1, (c.Nodes+999)/1000)
	}
	if c.Region == "" {
		c.Region = "global"
	}
	if c.Datacenter == "" {
		c.Datacenter = "dc1"
	}
	if c.NamePrefix == "" {
		c.NamePrefix = "sim"
	}
	if c.CPU <= 0 {
		c.CPU = 8000
	}
	if c.MemoryMB <= 0 {
		c.MemoryMB = 16384
	}
	if c.DiskMB <= 0 {
		c.DiskMB = 100000
	}
	if c.RunDelay < 0 {
		c.RunDelay = 0
	} else if c.RunDelay == 0 {
		c.RunDelay = 100 * time.Millisecond
	}
	if c.BatchDuration <= 0 {
		c.BatchDuration = time.Second
	}
	if c.SyncInterval <= 0 {
		c.SyncInterval = 200 * time.Millisecond
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 256
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Stats are cumulative counters of the simulator.
type Stats struct {
	Nodes          int   `json:"nodes"`
	Registered     int64 `json:"registered"`
	Lost           int64 `json:"lost"`
	Failed         int64 `json:"failed"`
	Heartbeats     int64 `json:"heartbeats"`
	Pulls          int64 `json:"pulls"`
	EmptyPulls     int64 `json:"empty_pulls"` // answered quickly with no newer index (backed off)
	Fetches        int64 `json:"fetches"`
	Updates        int64 `json:"updates"`
	RPCErrors      int64 `json:"rpc_errors"`
	AllocsSeen     int64 `json:"allocs_seen"`
	ReportedRun    int64 `json:"reported_running"`
	ReportedDone   int64 `json:"reported_complete"`
	ReportedFail   int64 `json:"reported_failed"`
	LastRunningAck int64 `json:"last_running_ack_unix_nano"`
}

// Sim is a running fleet of simulated nodes.
type Sim struct {
	cfg   Config
	pools []*rpc.Pool
	nodes []*node
	sem   chan struct{}
	stop  chan struct{}
	once  sync.Once

	tasks sync.Map // taskKey -> []string, shared by allocs

	registered, lost, failed                atomic.Int64
	heartbeats, pulls, emptyPulls, fetches  atomic.Int64
	updates, rpcErrs, allocsSeen            atomic.Int64
	reportedRun, reportedDone, reportedFail atomic.Int64
	lastRunningAck                          atomic.Int64
	mu                                      sync.Mutex // guards picking nodes to lose/fail
	rng                                     *rand.Rand
	errOnce                                 sync.Map
}

// New builds a simulator; Start registers the nodes.
func New(cfg Config) (*Sim, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("sim: no server addresses")
	}
	if cfg.Nodes <= 0 {
		return nil, errors.New("sim: Nodes must be positive")
	}
	cfg.defaults()
	s := &Sim{cfg: cfg, sem: make(chan struct{}, cfg.MaxInFlight), stop: make(chan struct{}),
		rng: rand.New(rand.NewPCG(1, 2))}
	for i := 0; i < cfg.Conns; i++ {
		s.pools = append(s.pools, rpc.NewPoolCodec(10*time.Second, newClientCodec))
	}
	s.nodes = make([]*node, cfg.Nodes)
	for i := range s.nodes {
		s.nodes[i] = newNode(s, i)
	}
	return s, nil
}

// Config returns the effective configuration.
func (s *Sim) Config() Config { return s.cfg }

// Start registers every node (MaxInFlight at a time), marks it ready and
// starts its heartbeats and alloc pulls. It returns when all nodes are ready,
// or the first registration error after retries.
func (s *Sim) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	var firstErr error
	var errMu sync.Mutex
	for _, n := range s.nodes {
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := n.registerRetry(ctx)
			<-s.sem
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("node %s: %w", n.name(), err)
				}
				errMu.Unlock()
				return
			}
			go n.pullLoop()
		}()
	}
	wg.Wait()
	return firstErr
}

// Stop ends heartbeats and pulls and closes the connections. The server will
// eventually mark the nodes down.
func (s *Sim) Stop() {
	s.once.Do(func() {
		close(s.stop)
		for _, n := range s.nodes {
			n.stopTimers()
		}
		for _, p := range s.pools {
			p.Shutdown()
		}
	})
}

func (s *Sim) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// NodeIDs returns the IDs of all simulated nodes.
func (s *Sim) NodeIDs() []string {
	out := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		out[i] = n.id
	}
	return out
}

// Lose makes count healthy nodes (chosen at random) stop heartbeating and
// pulling, as if their machines vanished; it returns their IDs.
func (s *Sim) Lose(count int) []string {
	return s.pick(count, func(n *node) { n.lose() })
}

// LoseIDs makes the named healthy nodes stop heartbeating and pulling, as
// Lose does; it returns the IDs it lost (unknown or already lost or failed
// nodes are skipped).
func (s *Sim) LoseIDs(ids []string) []string {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range s.nodes {
		if want[n.id] && n.mode.Load() == modeOK {
			n.lose()
			out = append(out, n.id)
		}
	}
	return out
}

// Fail makes count healthy nodes report every allocation failed and fail
// every allocation they receive from now on; it returns their IDs.
func (s *Sim) Fail(count int) []string {
	return s.pick(count, func(n *node) { n.fail() })
}

func (s *Sim) pick(count int, f func(*node)) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var healthy []*node
	for _, n := range s.nodes {
		if n.mode.Load() == modeOK {
			healthy = append(healthy, n)
		}
	}
	s.rng.Shuffle(len(healthy), func(i, j int) { healthy[i], healthy[j] = healthy[j], healthy[i] })
	count = min(count, len(healthy))
	ids := make([]string, 0, count)
	for _, n := range healthy[:count] {
		f(n)
		ids = append(ids, n.id)
	}
	return ids
}

// Stats returns a snapshot of the counters.
func (s *Sim) Stats() Stats {
	return Stats{
		Nodes: len(s.nodes), Registered: s.registered.Load(), Lost: s.lost.Load(), Failed: s.failed.Load(),
		Heartbeats: s.heartbeats.Load(), Pulls: s.pulls.Load(), EmptyPulls: s.emptyPulls.Load(),
		Fetches: s.fetches.Load(), Updates: s.updates.Load(), RPCErrors: s.rpcErrs.Load(),
		AllocsSeen: s.allocsSeen.Load(), ReportedRun: s.reportedRun.Load(), ReportedDone: s.reportedDone.Load(),
		ReportedFail: s.reportedFail.Load(), LastRunningAck: s.lastRunningAck.Load(),
	}
}

// logErr logs an RPC error once per method and message, so 10,000 nodes
// hitting the same failure do not flood the log.
func (s *Sim) logErr(method string, err error) {
	s.rpcErrs.Add(1)
	key := method + ": " + err.Error()
	if _, dup := s.errOnce.LoadOrStore(key, true); !dup {
		s.cfg.Logf("nodesim: %s", key)
	}
}

func (s *Sim) call(n *node, method string, args, reply any) error {
	return n.pool.Call(n.server, method, args, reply)
}

type taskKey struct {
	namespace, job, group string
	jobModifyIndex        uint64
}

// taskNames returns the task names of an allocation's group, shared between
// allocations of the same job version.
func (s *Sim) taskNames(a *wireAlloc) []string {
	if a.Job == nil {
		return nil
	}
	key := taskKey{a.Namespace, a.JobID, a.TaskGroup, a.Job.JobModifyIndex}
	if v, ok := s.tasks.Load(key); ok {
		return v.([]string)
	}
	var names []string
	for _, tg := range a.Job.TaskGroups {
		if tg != nil && tg.Name == a.TaskGroup {
			for _, t := range tg.Tasks {
				names = append(names, t.Name)
			}
			break
		}
	}
	v, _ := s.tasks.LoadOrStore(key, names)
	return v.([]string)
}
