package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/tools/nodesim/sim"
)

// options are the benchmark's inputs (flags).
type options struct {
	Nodes, Jobs, Count int
	Submitters         int    // concurrent HTTP job registrations
	Addr, RPCAddr      string // an existing server; empty starts one
	Servers            int    // servers to start (1 or 3); nodes are spread across them
	ServerPID          int    // with Addr: the server process, for CPU and RSS
	Bin                string // prebuilt drover binary; empty builds one
	Timeout            time.Duration
	RunDelay           time.Duration
	LosePercent        float64 // nodeloss: lose this share of nodes once all run
	Scenario           string
	CPUProfile         string        // save the server's CPU profile from the first submit here
	ProfileSeconds     time.Duration // length of the CPU profile
	HeapProfile        string        // save the server's heap profile, taken once all are placed, here
	SelfProfile        string        // save this process's (nodesim's) CPU profile, first submit -> end of run, here
	EventSubscribers   int           // readers of /v1/event/stream during the run
	MaxParallel        int           // >0: jobs get an update block; after all run a new version rolls out
	HealthyAfter       time.Duration // simulated client's min_healthy_time
	Idle               time.Duration // >0: measure the idle fleet's cost this long before submitting
	Stall              time.Duration // with Idle: then SIGSTOP the server this long and count nodes marked down
	Logf               func(string, ...any)
}

// result is the JSON the benchmark prints; scripts depend on its keys.
type result struct {
	Scenario             string  `json:"scenario,omitempty"`
	Servers              int     `json:"servers,omitempty"`       // server processes (3: a Raft cluster on disk)
	LeaderCPUSeconds     float64 `json:"leader_cpu_s,omitempty"`  // with several servers: the leader's share of server_cpu_s
	LeaderRSSMB          float64 `json:"leader_rss_mb,omitempty"` // with several servers: the leader's RSS (server_rss_mb is the largest)
	Nodes                int     `json:"nodes"`
	Jobs                 int     `json:"jobs"`
	Count                int     `json:"count"`
	Placed               int     `json:"placed"`
	Running              int     `json:"running"`
	PlacementsPerSec     float64 `json:"placements_per_sec"`
	EvalP50Ms            float64 `json:"eval_p50_ms"`
	EvalP99Ms            float64 `json:"eval_p99_ms"`
	Evals                int     `json:"evals"`
	Submitters           int     `json:"submitters"`
	SubmitSeconds        float64 `json:"submit_seconds"`
	PlaceSeconds         float64 `json:"place_seconds"`
	Seconds              float64 `json:"seconds"` // first submit -> every alloc running
	ServerRSSMB          float64 `json:"server_rss_mb"`
	ServerCPUSeconds     float64 `json:"server_cpu_s"`
	NodesimCPUSeconds    float64 `json:"nodesim_cpu_s"`
	NodesimKBPerNode     float64 `json:"nodesim_kb_per_node"`
	RegisterSeconds      float64 `json:"register_seconds"`
	LostNodes            int     `json:"lost_nodes,omitempty"`
	LostAllocs           int     `json:"lost_allocs,omitempty"`
	RecoverSeconds       float64 `json:"recover_seconds,omitempty"` // node loss -> every lost alloc running elsewhere
	MaxParallel          int     `json:"max_parallel,omitempty"`
	IdleSeconds          float64 `json:"idle_seconds,omitempty"`
	IdleServerCPUPct     float64 `json:"idle_server_cpu_pct,omitempty"` // server CPU while only heartbeats and pulls flow, % of one core
	IdleHeartbeatsPerSec float64 `json:"idle_heartbeats_per_sec,omitempty"`
	StallSeconds         float64 `json:"stall_seconds,omitempty"`
	NodesDownAfterStall  *int    `json:"nodes_down_after_stall,omitempty"`
	RollingSeconds       float64 `json:"rolling_seconds,omitempty"`          // new version registered -> its deployment successful
	RollingCPUPerAlloc   float64 `json:"rolling_cpu_ms_per_alloc,omitempty"` // server CPU during the rollout per replaced allocation
	RollingMaxInFlight   int     `json:"rolling_max_in_flight,omitempty"`    // most allocations of the new version not yet healthy at once, as sampled
	NodesimRPCErrors     int64   `json:"nodesim_rpc_errors"`
	NodesimPulls         int64   `json:"nodesim_pulls"` // Node.GetClientAllocs answers from first submit to all running
	NodesimUpdates       int64   `json:"nodesim_updates"`
	EventSubscribers     int     `json:"event_subscribers,omitempty"`
	EventFrames          int64   `json:"event_frames,omitempty"` // frames read by all subscribers
	EventMB              float64 `json:"event_mb,omitempty"`
	EventDrops           int64   `json:"event_drops,omitempty"`  // readers the server dropped (they resumed)
	EventErrors          int64   `json:"event_errors,omitempty"` // readers that failed otherwise
	Error                string  `json:"error,omitempty"`

	// EvalsByTrigger counts the benchmark jobs' evaluations (any status)
	// by TriggeredBy and status, as "trigger/status": where extra
	// evaluations come from.
	EvalsByTrigger map[string]int `json:"evals_by_trigger,omitempty"`
}

const jobPrefix = "bench-"

// run performs one benchmark. It always returns the figures gathered so far.
func run(ctx context.Context, o options) (res result, err error) {
	res = result{Scenario: o.Scenario, Nodes: o.Nodes, Jobs: o.Jobs, Count: o.Count, Submitters: o.Submitters}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	httpAddr, rpcAddr, pid := o.Addr, o.RPCAddr, o.ServerPID
	var rpcAddrs []string // every server's RPC address
	var pids []int        // every server process
	if httpAddr == "" {
		dir, err := os.MkdirTemp("", "drover-schedbench-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		bin := o.Bin
		if bin == "" {
			if bin, err = buildBinary(dir); err != nil {
				return res, err
			}
		}
		debug := o.CPUProfile != "" || o.HeapProfile != ""
		if o.Servers > 1 {
			srvs, err := startCluster(bin, dir, o.Servers, debug)
			if err != nil {
				return res, err
			}
			defer func() {
				for _, s := range srvs {
					s.stop()
				}
			}()
			res.Servers = o.Servers
			leader := leaderOf(srvs)
			if leader == nil {
				return res, fmt.Errorf("no leader known after the cluster formed")
			}
			// Jobs go in through the leader's HTTP API (profiles are the
			// leader's); nodes are spread across every server.
			httpAddr, rpcAddr, pid = leader.httpAddr, leader.rpcAddr, leader.pid()
			for _, s := range srvs {
				rpcAddrs = append(rpcAddrs, s.rpcAddr)
				pids = append(pids, s.pid())
			}
		} else {
			srv, err := startServer(bin, dir, debug)
			if err != nil {
				return res, err
			}
			defer srv.stop()
			httpAddr, rpcAddr, pid = srv.httpAddr, srv.rpcAddr, srv.pid()
		}
	}
	if len(rpcAddrs) == 0 {
		rpcAddrs, pids = []string{rpcAddr}, []int{pid}
	}
	c, err := newAPIClient(httpAddr)
	if err != nil {
		return res, err
	}

	// Nodes.
	memBefore := sim.ReadMem()
	ns, err := sim.New(sim.Config{Servers: rpcAddrs, Nodes: o.Nodes, RunDelay: o.RunDelay,
		HealthyAfter: o.HealthyAfter, Logf: logf})
	if err != nil {
		return res, err
	}
	defer ns.Stop()
	regStart := time.Now()
	if err := ns.Start(ctx); err != nil {
		return res, err
	}
	if err := waitReadyNodes(ctx, c, o.Nodes); err != nil {
		return res, err
	}
	res.RegisterSeconds = round(time.Since(regStart).Seconds(), 3)
	memAfter := sim.ReadMem()
	if memAfter.RSS > memBefore.RSS {
		res.NodesimKBPerNode = round(float64(memAfter.RSS-memBefore.RSS)/float64(o.Nodes)/1024, 2)
	}
	logf("%d nodes ready in %.1fs, %.1f KB per simulated node", o.Nodes, res.RegisterSeconds, res.NodesimKBPerNode)

	if o.Idle > 0 {
		if err := idle(ctx, c, ns, pid, o, &res); err != nil {
			return res, err
		}
		if o.Jobs == 0 {
			return res, nil
		}
	}

	// Jobs.
	serverCPU0, leaderCPU0 := clusterCPU(pids), clusterCPU([]int{pid})
	selfCPU0 := selfCPU()
	stats0 := ns.Stats()
	// CPU is counted up to the moment every allocation runs (cpuDone):
	// the reads of every allocation and evaluation that follow, for the
	// report, are the harness's, not the scheduling's. RSS is read at the
	// very end, so it includes them (the conservative figure).
	var serverCPU, leaderCPU, nodesimCPU float64
	cpuDone := func() {
		if pid > 0 {
			serverCPU = clusterCPU(pids) - serverCPU0
			leaderCPU = clusterCPU([]int{pid}) - leaderCPU0
		}
		nodesimCPU = selfCPU() - selfCPU0
	}
	defer func() {
		if nodesimCPU == 0 {
			cpuDone()
		}
		if pid > 0 {
			res.ServerCPUSeconds = round(serverCPU, 2)
			for _, p := range pids {
				res.ServerRSSMB = max(res.ServerRSSMB, round(float64(sim.ProcRSS(fmt.Sprint(p)))/(1<<20), 1))
			}
			if len(pids) > 1 {
				res.LeaderCPUSeconds = round(leaderCPU, 2)
				res.LeaderRSSMB = round(float64(sim.ProcRSS(fmt.Sprint(pid)))/(1<<20), 1)
			}
		}
		res.NodesimCPUSeconds = round(nodesimCPU, 2)
		st := ns.Stats()
		res.NodesimRPCErrors = st.RPCErrors
		res.NodesimPulls = st.Pulls - stats0.Pulls
		res.NodesimUpdates = st.Updates - stats0.Updates
	}()
	prof := &profiler{httpAddr: httpAddr, cpuFile: o.CPUProfile, heapFile: o.HeapProfile, cpuSeconds: o.ProfileSeconds}
	defer func() {
		if perr := prof.wait(); perr != nil && err == nil {
			err = perr
		}
	}()
	if o.SelfProfile != "" {
		stop, err := startSelfProfile(o.SelfProfile)
		if err != nil {
			return res, err
		}
		defer stop()
	}
	if o.EventSubscribers > 0 {
		res.EventSubscribers = o.EventSubscribers
		er := startEventReaders(ctx, httpAddr, o.EventSubscribers)
		defer er.stop(&res)
	}
	start := time.Now()
	prof.startCPU(ctx)
	if err := submit(ctx, c, o.Jobs, o.Count, o.Submitters, o.MaxParallel); err != nil {
		return res, err
	}
	res.SubmitSeconds = round(time.Since(start).Seconds(), 3)
	logf("submitted %d jobs in %.2fs", o.Jobs, res.SubmitSeconds)
	want := o.Jobs * o.Count
	// Progress comes from the simulated nodes (in this process), not from
	// polling the server: listing thousands of jobs ten times a second
	// would be charged to the server's CPU and slow what is measured. The
	// job summaries are read once the nodes report everything running.
	if err := waitNodesim(ctx, ns, stats0, want, func(seen bool) { prof.placed(ctx, seen) }); err != nil {
		return res, err
	}
	sum, err := waitSummaries(ctx, c, func(s counts) bool {
		prof.placed(ctx, s.placed >= want)
		return s.running >= want
	})
	res.Placed, res.Running = sum.placed, sum.running
	if err != nil {
		return res, fmt.Errorf("waiting for %d running: %w (placed %d, running %d)", want, err, sum.placed, sum.running)
	}
	cpuDone()
	res.Seconds = round(time.Since(start).Seconds(), 3)
	if ack := ns.Stats().LastRunningAck; ack > 0 {
		// The last running update the server acknowledged is the precise end.
		res.Seconds = round(time.Unix(0, ack).Sub(start).Seconds(), 3)
	}

	lastPlace, err := lastPlacement(c)
	if err != nil {
		return res, err
	}
	if d := time.Unix(0, lastPlace).Sub(start).Seconds(); d > 0 {
		res.PlaceSeconds = round(d, 3)
		res.PlacementsPerSec = round(float64(res.Placed)/d, 1)
	}
	res.Evals, res.EvalP50Ms, res.EvalP99Ms, res.EvalsByTrigger, err = evalLatency(c)
	if err != nil {
		return res, err
	}

	if o.MaxParallel > 0 && o.Scenario == "rolling" {
		if err := rollingUpdate(ctx, c, pid, o, &res); err != nil {
			return res, err
		}
	}
	if o.LosePercent > 0 {
		if err := nodeLoss(ctx, c, ns, o, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

func waitReadyNodes(ctx context.Context, c *api.Client, n int) error {
	for {
		nodes, _, err := c.Nodes().List(nil)
		if err == nil {
			ready := 0
			for _, nd := range nodes {
				if nd.Status == "ready" {
					ready++
				}
			}
			if ready >= n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes not ready: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func benchJob(i, count, maxParallel int) *api.Job {
	id := fmt.Sprintf("%s%05d", jobPrefix, i)
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", count)
	task := api.NewTask("t", "raw_exec")
	task.Config = map[string]any{"command": "/bin/sleep", "args": []string{"600"}}
	task.Resources = &api.Resources{CPU: ptr(20), MemoryMB: ptr(32)}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	if maxParallel < 0 {
		// No deployments: what a job with max_parallel = 0 gets.
		job.Update = &api.UpdateStrategy{MaxParallel: ptr(0)}
	}
	if maxParallel > 0 {
		job.Update = &api.UpdateStrategy{MaxParallel: ptr(maxParallel), MinHealthyTime: ptr(time.Duration(0)),
			HealthyDeadline: ptr(5 * time.Minute), ProgressDeadline: ptr(10 * time.Minute), HealthCheck: ptr("task_states")}
	}
	return job
}

// submit registers the jobs through the HTTP API, submitters at a time.
func submit(ctx context.Context, c *api.Client, jobs, count, submitters, maxParallel int) error {
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for w := 0; w < max(1, min(submitters, jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if _, _, err := c.Jobs().Register(benchJob(i, count, maxParallel), nil); err != nil {
					select {
					case errs <- fmt.Errorf("register job %d: %w", i, err):
					default:
					}
				}
			}
		}()
	}
	var err error
loop:
	for i := 0; i < jobs; i++ {
		select {
		case work <- i:
		case err = <-errs:
			break loop
		case <-ctx.Done():
			err = ctx.Err()
			break loop
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

type counts struct{ placed, running int }

// waitNodesim waits until the simulated nodes have received want new
// allocations and the server has acknowledged want running updates since
// stats0. placed is called on each check with whether all have arrived.
func waitNodesim(ctx context.Context, ns *sim.Sim, stats0 sim.Stats, want int, placed func(bool)) error {
	for {
		st := ns.Stats()
		seen := st.AllocsSeen-stats0.AllocsSeen >= int64(want)
		placed(seen)
		if seen && st.ReportedRun-stats0.ReportedRun >= int64(want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d running on the simulated nodes: %w (seen %d, running %d)", want, ctx.Err(),
				st.AllocsSeen-stats0.AllocsSeen, st.ReportedRun-stats0.ReportedRun)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitSummaries polls the job list (whose stubs carry summaries) until done
// says the counts are enough. Used after waitNodesim, it normally answers
// on the first call.
func waitSummaries(ctx context.Context, c *api.Client, done func(counts) bool) (counts, error) {
	var last counts
	for {
		stubs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: jobPrefix})
		if err == nil {
			var s counts
			for _, j := range stubs {
				if j.JobSummary == nil {
					continue
				}
				for _, tg := range j.JobSummary.Summary {
					s.placed += tg.Starting + tg.Running + tg.Complete + tg.Failed + tg.Lost + tg.Unknown
					s.running += tg.Running
				}
			}
			last = s
			if done(s) {
				return s, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lastPlacement is the newest CreateTime of the benchmark's allocations.
func lastPlacement(c *api.Client) (int64, error) {
	allocs, _, err := c.Allocations().List(nil)
	if err != nil {
		return 0, err
	}
	var last int64
	for _, a := range allocs {
		if strings.HasPrefix(a.JobID, jobPrefix) {
			last = max(last, a.CreateTime)
		}
	}
	return last, nil
}

// evalLatency reports CreateTime->ModifyTime of the complete evaluations,
// and every evaluation of the benchmark's jobs by trigger/status.
func evalLatency(c *api.Client) (n int, p50, p99 float64, byTrigger map[string]int, err error) {
	evals, _, err := c.Evaluations().List(nil)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	byTrigger = map[string]int{}
	var ds []float64
	for _, e := range evals {
		if strings.HasPrefix(e.JobID, jobPrefix) {
			byTrigger[e.TriggeredBy+"/"+e.Status]++
		}
		if strings.HasPrefix(e.JobID, jobPrefix) && e.Status == "complete" && e.ModifyTime >= e.CreateTime {
			ds = append(ds, float64(e.ModifyTime-e.CreateTime)/1e6)
		}
	}
	if len(ds) == 0 {
		return 0, 0, 0, byTrigger, nil
	}
	sort.Float64s(ds)
	q := func(p float64) float64 { return round(ds[min(len(ds)-1, int(p*float64(len(ds))))], 2) }
	return len(ds), q(0.50), q(0.99), byTrigger, nil
}

func round(v float64, places int) float64 {
	p := 1.0
	for i := 0; i < places; i++ {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

func ptr[T any](v T) *T { return &v }
