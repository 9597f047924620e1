package server

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

// The reconnect protocol's model test (issue #15, reliability figure R4).
//
// One in-process server whose schedulers are driven by the test: no worker
// takes service evaluations, a step "sched" dequeues one and runs it to
// completion; the eval broker and the schedulers read a fake clock that only
// the step "timer" moves (so the disconnect window's follow-up evaluation
// comes due when the test says), and heartbeats expire only through the
// step "expire". Each run is a job of count 2 with a disconnect block
// (replace and reconcile chosen by the seed) on three fresh nodes whose
// client agents are modelled: they heartbeat, pull-and-push their
// allocations (the whole set or only part of it, as a half-finished sync
// would), re-register, go silent and come back, in an order the seed picks.
//
// After every step it checks what seed 001 is about:
//   - no placement on a node that is not ready (a half-updated node);
//   - no replacement for an original that is running on a ready node;
//   - never two live replacements of one original, and never more than
//     count allocations that are live and not waiting for their reconnect
//     decision;
//   - while no allocation has been unknown for longer than lost_after, no
//     step leaves an allocation name that had a copy running or unknown
//     without one (so the job never has fewer running-or-unknown
//     allocations than it had, up to count);
//
// and at the end of each run, once every client is back, that the job
// settles at exactly count running allocations.
//
// R4_SEED=<n> runs the one seed a failure printed; R4_RUNS=<n> sets the
// number of runs (1,000 by default, 200 with -short or -race) and R4_FIRST=<n> the
// first seed (1). The seeds that failed before a fix (r4RegressionSeeds)
// always run too.
func TestReconnectProtocolModel(t *testing.T) {
	runs, first := 1000, int64(1)
	if testing.Short() || raceEnabled {
		// Seeds 1-200 (the race detector makes 1,000 take a minute; CI runs
		// this package with it).
		runs = 200
	}
	if v := os.Getenv("R4_RUNS"); v != "" {
		runs, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("R4_FIRST"); v != "" {
		first, _ = strconv.ParseInt(v, 10, 64)
	}
	if v := os.Getenv("R4_SEED"); v != "" {
		first, _ = strconv.ParseInt(v, 10, 64)
		runs = 1
	}
	fake := clock.NewFake(time.Now())
	s := testServer(t, func(c *Config) {
		c.EnabledSchedulers = []string{structs.JobTypeSysBatch}
		c.brokerClock = fake
		c.schedulerClock = fake.Now
		c.allocBatchWindow = time.Millisecond
		c.MinHeartbeatTTL = 24 * time.Hour // heartbeats expire only by the step "expire"
		c.HeartbeatGrace = 24 * time.Hour
		c.FailoverHeartbeatTTL = 24 * time.Hour
	})
	seeds := make([]int64, 0, runs+len(r4RegressionSeeds))
	for i := 0; i < runs; i++ {
		seeds = append(seeds, first+int64(i))
	}
	if os.Getenv("R4_SEED") == "" {
		for _, seed := range r4RegressionSeeds {
			if seed < first || seed >= first+int64(runs) {
				seeds = append(seeds, seed)
			}
		}
	}
	start := time.Now()
	steps := 0
	for _, seed := range seeds {
		m := newReconnectModel(t, s, fake, seed)
		if err := m.run(40); err != nil {
			t.Fatalf("seed %d (R4_SEED=%d reproduces it): %v\nsteps:\n%s", seed, seed, err, strings.Join(m.log, "\n"))
		}
		if os.Getenv("R4_PRINT") != "" {
			t.Log(strings.Join(m.log, "\n"))
		}
		steps += m.steps
	}
	t.Logf("R4: %d interleavings, %d steps, 0 violations in %s", len(seeds), steps, time.Since(start).Round(time.Millisecond))
}

// r4RegressionSeeds failed before a fix and always run: 35 (a node back
// from a missed heartbeat held in initializing forever), 323 (the running
// original stopped for a replacement that had not started), 2407 (a
// replacement that failed while its original was away rescheduled beside
// it, and another name's allocation stopped as one too many).
var r4RegressionSeeds = []int64{35, 323, 2407}

type modelClient struct {
	node    *structs.Node
	silent  bool
	running map[string]bool // allocations its tasks run
	crashed map[string]bool // allocations that failed here, not yet told
	started map[string]time.Time
}

type reconnectModel struct {
	t         *testing.T
	s         *Server
	fake      *clock.Fake
	rng       *rand.Rand
	job       *structs.Job
	count     int
	lostAfter time.Duration
	clients   []*modelClient
	crashed   map[string]bool // every allocation a client's crash step failed
	w         *Worker
	steps     int
	log       []string
}

func newReconnectModel(t *testing.T, s *Server, fake *clock.Fake, seed int64) *reconnectModel {
	rng := rand.New(rand.NewSource(seed))
	dc := fmt.Sprintf("r4-%d", seed)
	m := &reconnectModel{t: t, s: s, fake: fake, rng: rng, count: 2, lostAfter: time.Hour, crashed: map[string]bool{},
		w: &Worker{srv: s, rpc: s.RPC, inflight: make(chan struct{}, maxCompletions), quit: make(chan struct{})}}
	for i := 0; i < 3; i++ {
		n := &structs.Node{ID: seededID(rng), SecretID: seededID(rng), Name: fmt.Sprintf("%s-%d", dc, i), Datacenter: dc,
			Attributes: map[string]string{"kernel.name": "linux", "driver.raw_exec": "1", "unique.network.ip-address": "127.0.0.1"},
			Drivers:    map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
			NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: int64(3000 + 1000*i)},
				Memory: structs.NodeMemoryResources{MemoryMB: 4096}, Disk: structs.NodeDiskResources{DiskMB: 100000}}}
		m.clients = append(m.clients, &modelClient{node: n, running: map[string]bool{}, crashed: map[string]bool{}, started: map[string]time.Time{}})
	}
	job := testJob("r4-"+strconv.FormatInt(seed, 10), m.count)
	job.Datacenters = []string{dc}
	// Nodes of different sizes and an affinity every node meets: the
	// scheduler scores all three (not a random two) and their scores
	// differ, so where an allocation goes follows from the seed's steps,
	// not from the random eval ID that seeds the node shuffle.
	weight := int8(50)
	job.Affinities = []*structs.Affinity{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "=", Weight: &weight}}
	replace := rng.Intn(3) > 0
	strategy := []string{"best_score", "keep_original", "keep_replacement", "longest_running"}[rng.Intn(4)]
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: &m.lostAfter, Replace: &replace, Reconcile: &strategy}
	m.job = job
	m.logf("job %s: replace=%v reconcile=%s", job.ID, replace, strategy)
	return m
}

// seededID is a UUID drawn from the run's seed (node IDs order the
// scheduler's candidates).
func seededID(rng *rand.Rand) string {
	var b [16]byte
	rng.Read(b[:])
	id, _ := uuid.FromBytes(b[:])
	return id.String()
}

func (m *reconnectModel) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf("%3d ", m.steps)+fmt.Sprintf(format, args...))
}

func (m *reconnectModel) rpc(method string, args, reply any) error {
	return m.s.RPC(method, args, reply)
}

func (m *reconnectModel) run(n int) error {
	for _, c := range m.clients {
		var r structs.NodeUpdateResponse
		if err := m.rpc("Node.Register", &structs.NodeRegisterRequest{Node: c.node.Copy()}, &r); err != nil {
			return err
		}
		if err := m.heartbeat(c); err != nil {
			return err
		}
	}
	var jr structs.JobRegisterResponse
	if err := m.rpc("Job.Register", &structs.JobRegisterRequest{Job: m.job}, &jr); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := m.step(); err != nil {
			return err
		}
	}
	// Every client comes back and keeps talking: the job settles at count.
	for _, c := range m.clients {
		c.silent = false
	}
	for round := 0; ; round++ {
		if round == 20 {
			return fmt.Errorf("the job did not settle at %d running allocations: %s", m.count, m.describe())
		}
		for _, c := range m.clients {
			for _, f := range []func(*modelClient) error{m.heartbeat, func(c *modelClient) error { return m.push(c, true) }, m.heartbeat} {
				if err := m.checked(fmt.Sprintf("settle %s", c.node.Name), func() error { return f(c) }); err != nil {
					return err
				}
			}
		}
		for {
			ran := false
			if err := m.checked("settle sched", func() (err error) { ran, err = m.sched(); return }); err != nil {
				return err
			}
			if !ran {
				break
			}
		}
		if m.settled() {
			break
		}
		// Delayed reschedules of crashed allocations come due.
		if err := m.advance(m.lostAfter); err != nil {
			return err
		}
	}
	// Done with this job: stop it so later runs' passes find nothing to do.
	var dr structs.JobDeregisterResponse
	if err := m.rpc("Job.Deregister", &structs.JobDeregisterRequest{JobID: m.job.ID, WriteRequest: structs.WriteRequest{Namespace: "default"}}, &dr); err != nil {
		return err
	}
	for {
		ran, err := m.sched()
		if err != nil {
			return err
		}
		if !ran {
			return nil
		}
	}
}

// step takes one random action and checks the invariants after it.
func (m *reconnectModel) step() error {
	c := m.clients[m.rng.Intn(len(m.clients))]
	var name string
	var act func() error
	switch k := m.rng.Intn(100); {
	case k < 25:
		name, act = "sched", func() error { _, err := m.sched(); return err }
	case k < 40:
		name, act = "heartbeat "+c.node.Name, func() error { return m.heartbeat(c) }
	case k < 50:
		name, act = "push-all "+c.node.Name, func() error { return m.push(c, true) }
	case k < 58:
		name, act = "push-part "+c.node.Name, func() error { return m.push(c, false) }
	case k < 63:
		name, act = "register "+c.node.Name, func() error { return m.register(c) }
	case k < 73:
		name, act = "silent "+c.node.Name, func() error { c.silent = true; return nil }
	case k < 78:
		name, act = "back "+c.node.Name, func() error { c.silent = false; return nil }
	case k < 83:
		return m.comeBack(c)
	case k < 90:
		name, act = "expire "+c.node.Name, func() error { return m.expire(c) }
	case k < 93:
		name, act = "crash "+c.node.Name, func() error { m.crash(c); return nil }
	default:
		d := m.lostAfter/3 + time.Second
		name, act = "timer +"+d.String(), func() error { return m.advance(d) }
	}
	return m.checked(name, act)
}

// comeBack is seed 001's moment: a silent client resumes and makes its
// calls (status, alloc push, register; the status call twice, as its next
// heartbeat follows) while scheduler passes run in between, in an order
// the seed picks. Each call is a step of its own, checked as any other.
func (m *reconnectModel) comeBack(c *modelClient) error {
	if err := m.checked("back "+c.node.Name, func() error { c.silent = false; return nil }); err != nil {
		return err
	}
	calls := []string{"heartbeat", "heartbeat", "push", "register", "sched", "sched", "sched"}
	m.rng.Shuffle(len(calls), func(i, j int) { calls[i], calls[j] = calls[j], calls[i] })
	for _, call := range calls {
		var err error
		switch call {
		case "heartbeat":
			err = m.checked("heartbeat "+c.node.Name, func() error { return m.heartbeat(c) })
		case "push":
			all := m.rng.Intn(2) == 0
			err = m.checked(fmt.Sprintf("push(all=%v) %s", all, c.node.Name), func() error { return m.push(c, all) })
		case "register":
			err = m.checked("register "+c.node.Name, func() error { return m.register(c) })
		case "sched":
			err = m.checked("sched", func() error { _, err := m.sched(); return err })
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checked runs one step and checks every invariant against the states
// before and after it.
func (m *reconnectModel) checked(name string, act func() error) error {
	m.steps++
	before := m.snapshot()
	if err := act(); err != nil {
		return fmt.Errorf("step %q: %v", name, err)
	}
	after := m.snapshot()
	m.logf("%-26s %s", name, m.describe())
	return m.check(name, before, after)
}

type modelState struct {
	allocs map[string]*structs.Allocation
	nodes  map[string]*structs.Node
}

func (m *reconnectModel) snapshot() modelState {
	st := m.s.State()
	out := modelState{allocs: map[string]*structs.Allocation{}, nodes: map[string]*structs.Node{}}
	allocs, err := st.AllocsByJob(nil, "default", m.job.ID, true)
	if err != nil {
		m.t.Fatal(err)
	}
	for _, a := range allocs {
		out.allocs[a.ID] = a
	}
	for _, c := range m.clients {
		n, err := st.NodeByID(nil, c.node.ID)
		if err != nil {
			m.t.Fatal(err)
		}
		out.nodes[c.node.ID] = n
	}
	return out
}

func awaitingReconnect(a *structs.Allocation) bool {
	for i := len(a.AllocStates) - 1; i >= 0; i-- {
		if st := a.AllocStates[i]; st != nil && st.Field == "ClientStatus" {
			return st.Value == structs.AllocClientStatusUnknown
		}
	}
	return false
}

func liveDesired(a *structs.Allocation) bool {
	return a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminalStatus()
}

func (m *reconnectModel) check(name string, before, after modelState) error {
	// Only the client says an unknown allocation runs again: a pass that
	// does it decided from the state before the outage.
	if name == "sched" || name == "settle sched" {
		for id, a := range after.allocs {
			if b := before.allocs[id]; b != nil && b.ClientStatus == structs.AllocClientStatusUnknown &&
				a.ClientStatus == structs.AllocClientStatusRunning {
				return fmt.Errorf("a scheduler pass took %s for running before its client said so (stale state)", id[:8])
			}
		}
	}
	// Placements made by this step.
	for id, a := range after.allocs {
		if before.allocs[id] != nil {
			continue
		}
		if n := before.nodes[a.NodeID]; n == nil || n.Status != structs.NodeStatusReady {
			status := "gone"
			if n != nil {
				status = n.Status
			}
			return fmt.Errorf("allocation %s placed on node %s while it was %s", a.ID[:8], a.NodeID[:8], status)
		}
		if prev := before.allocs[a.PreviousAllocation]; prev != nil && liveDesired(prev) &&
			prev.ClientStatus == structs.AllocClientStatusRunning && !awaitingReconnect(prev) &&
			before.nodes[prev.NodeID].Status == structs.NodeStatusReady {
			return fmt.Errorf("unnecessary placement: %s replaces %s, which runs on ready node %s", a.ID[:8], prev.ID[:8], prev.NodeID[:8])
		}
	}
	replacements := map[string]int{}
	decided := 0
	expired := false
	now := m.fake.Now()
	for _, a := range after.allocs {
		if liveDesired(a) && a.PreviousAllocation != "" {
			replacements[a.PreviousAllocation]++
			if replacements[a.PreviousAllocation] > 1 {
				return fmt.Errorf("two live replacements of %s", a.PreviousAllocation[:8])
			}
		}
		if liveDesired(a) && a.ClientStatus != structs.AllocClientStatusUnknown && !awaitingReconnect(a) {
			decided++
		}
	}
	for _, a := range before.allocs {
		if a.ClientStatus == structs.AllocClientStatusUnknown || awaitingReconnect(a) {
			if since := unknownSince(a); !since.IsZero() && !now.Before(since.Add(m.lostAfter)) {
				expired = true
			}
		}
	}
	if decided > m.count {
		return fmt.Errorf("%d live allocations not waiting for a reconnect decision, count is %d", decided, m.count)
	}
	// Inside lost_after, an allocation name (job.group[i]) that had a copy
	// running or unknown still has one after any step: no pass stops the
	// last copy of a name (the original in favour of a replacement that
	// never ran, say), and nothing marks it lost. A name whose copies all
	// crashed (the model's crash step) may lose them once the client says
	// so.
	if !expired {
		covered := coveredNames(after)
		for name, copies := range coveredNames(before) {
			promised := false
			for _, id := range copies {
				promised = promised || !m.crashed[id]
			}
			if promised && len(covered[name]) == 0 {
				return fmt.Errorf("%s lost its last copy running or unknown inside lost_after (had %v; now %s)", name, copies, describeAllocs(after))
			}
		}
	}
	return nil
}

// coveredNames maps each allocation name to its copies that are desired
// running and running or unknown on the servers.
func coveredNames(st modelState) map[string][]string {
	out := map[string][]string{}
	for _, a := range st.allocs {
		if a.DesiredStatus == structs.AllocDesiredStatusRun &&
			(a.ClientStatus == structs.AllocClientStatusRunning || a.ClientStatus == structs.AllocClientStatusUnknown) {
			out[a.Name] = append(out[a.Name], a.ID)
		}
	}
	return out
}

func (m *reconnectModel) settled() bool {
	st := m.snapshot()
	running := 0
	for _, a := range st.allocs {
		if liveDesired(a) {
			if a.ClientStatus != structs.AllocClientStatusRunning || awaitingReconnect(a) {
				return false
			}
			running++
		}
	}
	for _, n := range st.nodes {
		if n.Status != structs.NodeStatusReady {
			return false
		}
	}
	return running == m.count
}

func (m *reconnectModel) describe() string {
	st := m.snapshot()
	var nodes, allocs []string
	for _, c := range m.clients {
		flag := ""
		if c.silent {
			flag = "(silent)"
		}
		nodes = append(nodes, fmt.Sprintf("%s=%s%s", c.node.Name[len(c.node.Name)-1:], st.nodes[c.node.ID].Status, flag))
	}
	for _, a := range st.allocs {
		node := "?"
		for _, c := range m.clients {
			if c.node.ID == a.NodeID {
				node = c.node.Name[len(c.node.Name)-1:]
			}
		}
		prev := ""
		if a.PreviousAllocation != "" {
			prev = "<" + a.PreviousAllocation[:4]
		}
		allocs = append(allocs, fmt.Sprintf("%s%s@%s:%s/%s", a.ID[:4], prev, node, a.DesiredStatus, a.ClientStatus))
	}
	sort.Strings(allocs)
	return strings.Join(nodes, " ") + " | " + strings.Join(allocs, " ")
}

// advance moves the fake clock and waits until the broker has released
// every evaluation that came due (it does so on its own goroutine).
func (m *reconnectModel) advance(d time.Duration) error {
	m.fake.Advance(d)
	deadline := time.Now().Add(10 * time.Second)
	for m.s.broker.DueWaiting() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the broker never released its due evaluations")
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// sched runs one ready evaluation of the run's job to completion, as a
// worker would. Evaluations of earlier runs' jobs (stopped by then; their
// follow-ups come due as the clock moves) are run first and not counted.
func (m *reconnectModel) sched() (bool, error) {
	for {
		if m.s.broker.Stats().ByScheduler[structs.JobTypeService].Ready == 0 {
			return false, nil
		}
		eval, token, err := m.s.broker.Dequeue([]string{structs.JobTypeService}, 0)
		if err != nil || eval == nil {
			return false, err
		}
		idx, _ := m.s.State().LatestIndex()
		m.w.process(eval, token, idx)
		deadline := time.Now().Add(10 * time.Second)
		for len(m.w.inflight) > 0 {
			if time.Now().After(deadline) {
				return true, fmt.Errorf("evaluation %s never completed", eval.ID)
			}
			time.Sleep(100 * time.Microsecond)
		}
		if _, outstanding := m.s.broker.Outstanding(eval.ID); outstanding {
			return true, fmt.Errorf("evaluation %s still outstanding after its pass", eval.ID)
		}
		if eval.JobID == m.job.ID {
			return true, nil
		}
	}
}

func (m *reconnectModel) heartbeat(c *modelClient) error {
	if c.silent {
		return nil
	}
	var r structs.NodeUpdateResponse
	return m.rpc("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: c.node.ID, SecretID: c.node.SecretID,
		Status: structs.NodeStatusReady}, &r)
}

func (m *reconnectModel) register(c *modelClient) error {
	if c.silent {
		return nil
	}
	var r structs.NodeUpdateResponse
	return m.rpc("Node.Register", &structs.NodeRegisterRequest{Node: c.node.Copy()}, &r)
}

// crash fails one allocation the client runs (its tasks died); the client
// tells the servers on its next push.
func (m *reconnectModel) crash(c *modelClient) {
	var ids []string
	for id := range c.running {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return
	}
	sort.Strings(ids)
	id := ids[m.rng.Intn(len(ids))]
	delete(c.running, id)
	c.crashed[id] = true
	m.crashed[id] = true
}

// expire is the node's heartbeat TTL running out while its client is
// silent (a talking client's TTL does not run out).
func (m *reconnectModel) expire(c *modelClient) error {
	if !c.silent {
		return nil
	}
	m.s.heartbeats.Clear(c.node.ID)
	return m.s.markNodesDown([]string{c.node.ID})
}

// push is the client pulling its allocations and pushing what it does with
// them: it runs what it should run (including those the server holds as
// unknown: they never stopped), stops what it should stop. all=false pushes
// only a random part of the changes, as a sync cut short would.
func (m *reconnectModel) push(c *modelClient, all bool) error {
	if c.silent {
		return nil
	}
	allocs, err := m.s.State().AllocsByNode(nil, c.node.ID)
	if err != nil {
		return err
	}
	// In an order the seed decides (alloc IDs are random).
	sort.Slice(allocs, func(i, j int) bool {
		if allocs[i].Name != allocs[j].Name {
			return allocs[i].Name < allocs[j].Name
		}
		return allocs[i].CreateIndex < allocs[j].CreateIndex
	})
	now := m.fake.Now()
	var ups []*structs.Allocation
	for _, a := range allocs {
		up := &structs.Allocation{ID: a.ID, NodeID: a.NodeID}
		switch {
		case c.crashed[a.ID] && !a.ClientTerminalStatus():
			up.ClientStatus = structs.AllocClientStatusFailed
			up.TaskStates = map[string]*structs.TaskState{"t": {State: structs.TaskStateDead, Failed: true, StartedAt: now, FinishedAt: now}}
		case a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminalStatus():
			if a.ClientStatus == structs.AllocClientStatusRunning && !awaitingReconnect(a) {
				continue
			}
			if c.started[a.ID].IsZero() {
				c.started[a.ID] = now
			}
			up.ClientStatus = structs.AllocClientStatusRunning
			up.TaskStates = map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: c.started[a.ID]}}
		case c.running[a.ID]:
			up.ClientStatus = structs.AllocClientStatusComplete
			up.TaskStates = map[string]*structs.TaskState{"t": {State: structs.TaskStateDead, StartedAt: now, FinishedAt: now}}
		default:
			continue
		}
		if all || m.rng.Intn(2) == 0 {
			ups = append(ups, up)
		}
	}
	if len(ups) == 0 {
		return nil
	}
	var r structs.GenericResponse
	err = m.rpc("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: ups}, &r)
	if err != nil && strings.Contains(err.Error(), "not allowed to update allocs") {
		// The server refuses a disconnected or down node's pushes; the
		// client tries again later (it starts and stops what it was told
		// meanwhile all the same).
		err = nil
	}
	for _, u := range ups {
		if err == nil {
			delete(c.crashed, u.ID)
		}
		if u.ClientStatus == structs.AllocClientStatusRunning {
			c.running[u.ID] = true
		} else {
			delete(c.running, u.ID)
		}
	}
	return err
}

func describeAllocs(st modelState) string {
	var out []string
	for _, a := range st.allocs {
		out = append(out, fmt.Sprintf("%s %s %s/%s", a.ID[:8], a.Name, a.DesiredStatus, a.ClientStatus))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
