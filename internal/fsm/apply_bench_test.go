package fsm

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

// The steady fill's shape: benchNodes nodes, placements in plans of
// benchPlanSize, each on a distinct node, benchPreload plans applied
// before the timed entries.
const (
	benchNodes    = 5000
	benchPlanSize = 1000
	benchPreload  = 50
)

// benchCluster is an FSM holding the steady fill's nodes, one job and
// benchPreload plans' allocations, with every node's allocations read
// once (as a scheduling pass and the clients' pulls do), so the writes
// keep the per-node memo current as they do in a running server.
type benchCluster struct {
	f       *FSM
	nodeIDs []string
	job     *structs.Job // as stored: plans carry it as the scheduler read it
	index   uint64
	plans   int        // plans built so far
	byNode  [][]string // allocation IDs per node, in placement order
}

func newBenchCluster(b *testing.B) *benchCluster {
	b.Helper()
	return newBenchClusterWith(b, Config{})
}

func newBenchClusterWith(b *testing.B, cfg Config) *benchCluster {
	b.Helper()
	f, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c := &benchCluster{f: f, index: 1, byNode: make([][]string, benchNodes)}
	for i := range benchNodes {
		n := &structs.Node{ID: fmt.Sprintf("%08x-1111-2222-3333-%012x", i, i), SecretID: fmt.Sprintf("secret-%d", i),
			Name: fmt.Sprintf("sim-%d", i), Datacenter: "dc1", NodePool: "default", Status: structs.NodeStatusReady,
			Attributes: map[string]string{"kernel.name": "linux"}}
		c.nodeIDs = append(c.nodeIDs, n.ID)
		c.apply(b, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n})
	}
	job := &structs.Job{
		Region: "global", Namespace: structs.DefaultNamespace, ID: "bench-job", Name: "bench-job", Type: structs.JobTypeService,
		Priority: 50, Datacenters: []string{"dc1"}, NodePool: "default",
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: benchPlanSize * benchPreload,
			RestartPolicy: &structs.RestartPolicy{Attempts: 2, Mode: structs.RestartPolicyModeFail},
			EphemeralDisk: &structs.EphemeralDisk{SizeMB: 300},
			Tasks: []*structs.Task{{Name: "server", Driver: "mock_driver", Config: map[string]any{"run_for": "1h"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}},
		}},
	}
	c.apply(b, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	if c.job, err = f.State().JobByID(nil, structs.DefaultNamespace, job.ID); err != nil || c.job == nil {
		b.Fatal("job not stored", err)
	}
	for range benchPreload {
		c.applyLog(b, c.planEntry(b))
	}
	read := f.State().LiveAllocsByNodeReader()
	for _, id := range c.nodeIDs {
		la, err := read(id)
		if err != nil {
			b.Fatal(err)
		}
		la.Usage()
		if _, err := f.State().NodeClientAllocs(id, 0, false); err != nil {
			b.Fatal(err)
		}
	}
	return c
}

func (c *benchCluster) entry(b *testing.B, mt structs.MessageType, msg any) *raft.Log {
	buf, err := structs.Encode(mt, msg)
	if err != nil {
		b.Fatal(err)
	}
	c.index++
	return &raft.Log{Index: c.index, Type: raft.LogCommand, Data: buf}
}

func (c *benchCluster) apply(b *testing.B, mt structs.MessageType, msg any) {
	c.applyLog(b, c.entry(b, mt, msg))
}

func (c *benchCluster) applyLog(b *testing.B, l *raft.Log) {
	if resp := c.f.Apply(l); resp != nil {
		b.Fatalf("apply index %d: %v", l.Index, resp)
	}
}

// planEntry is the next plan's Raft entry, shaped as the plan applier
// writes it: the job once, benchPlanSize placements without it on
// consecutive nodes (wrapping), each with its grant and the metrics the
// scheduler records (five scored nodes, their score maps drawn from a few
// load levels as equal nodes score alike).
func (c *benchCluster) planEntry(b *testing.B) *raft.Log {
	p := c.plans
	c.plans++
	now := int64(1_700_000_000_000_000_000) + int64(p)*int64(time.Second)
	evalID := fmt.Sprintf("eval%04d-0000-0000-0000-000000000000", p)
	req := &structs.ApplyPlanResultsRequest{Job: c.job, EvalID: evalID, UpdatedAt: now}
	for j := range benchPlanSize {
		k := p*benchPlanSize + j
		node := k % benchNodes
		id := fmt.Sprintf("%08x-aaaa-bbbb-cccc-%012x", k, k)
		c.byNode[node] = append(c.byNode[node], id)
		scored := make([]*structs.NodeScoreMeta, 5)
		for s := range scored {
			n := (node + s*7) % benchNodes
			level := (k/benchNodes + s) % 4
			scores := map[string]float64{"binpack": 0.4 + 0.1*float64(level)}
			if s%2 == 1 {
				scores["job-anti-affinity"] = -0.5
			}
			norm := 0.0
			for _, v := range scores {
				norm += v
			}
			scored[s] = &structs.NodeScoreMeta{NodeID: c.nodeIDs[n], Scores: scores, NormScore: norm / float64(len(scores))}
		}
		req.Alloc = append(req.Alloc, &structs.Allocation{
			ID: id, Namespace: structs.DefaultNamespace, EvalID: evalID,
			Name:   structs.AllocName(c.job.ID, "web", uint(k)),
			NodeID: c.nodeIDs[node], NodeName: fmt.Sprintf("sim-%d", node), JobID: c.job.ID, TaskGroup: "web",
			AllocatedResources: &structs.AllocatedResources{
				Tasks: map[string]*structs.AllocatedTaskResources{"server": {
					Cpu:    structs.AllocatedCpuResources{CpuShares: 100},
					Memory: structs.AllocatedMemoryResources{MemoryMB: 64},
				}},
				TaskLifecycles: map[string]*structs.TaskLifecycle{"server": nil},
				Shared:         structs.AllocatedSharedResources{DiskMB: 300},
			},
			Metrics: &structs.AllocMetric{
				NodesEvaluated: 5, NodesInPool: benchNodes, NodePool: "default",
				NodesAvailable:     map[string]int{"dc1": benchNodes},
				ClassFiltered:      map[string]int{},
				ConstraintFiltered: map[string]int{},
				ScoreMetaData:      scored,
				AllocationTime:     12_345,
			},
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
			CreateTime: now, ModifyTime: now,
		})
	}
	return c.entry(b, structs.ApplyPlanResultsRequestType, req)
}

// clientEntry is round r's client update entry: benchClientNodes nodes'
// clients (consecutive, wrapping) each report benchClientPerNode of their
// allocations, as a simulated client strips them, going running (or,
// every other pass over the nodes, back to pending, so the rounds can
// go on).
func (c *benchCluster) clientEntry(b *testing.B, r int) *raft.Log {
	const benchClientNodes, benchClientPerNode = 50, 5
	pass := r * benchClientNodes / benchNodes
	status, state := structs.AllocClientStatusRunning, structs.TaskStateRunning
	if pass%2 == 1 {
		status, state = structs.AllocClientStatusPending, structs.TaskStatePending
	}
	started := time.Unix(1_700_000_000+int64(r), 0).UTC()
	req := &structs.AllocUpdateRequest{UpdatedAt: started.UnixNano()}
	for n := range benchClientNodes {
		node := (r*benchClientNodes + n) % benchNodes
		for _, id := range c.byNode[node][:benchClientPerNode] {
			req.Alloc = append(req.Alloc, &structs.Allocation{ID: id, NodeID: c.nodeIDs[node], ClientStatus: status,
				TaskStates: map[string]*structs.TaskState{"server": {State: state, StartedAt: started}}})
		}
	}
	return c.entry(b, structs.AllocClientUpdateRequestType, req)
}

// BenchmarkApplyPlanResults times FSM.Apply of a 1,000-placement plan
// entry (decode, compaction, state write) into a store of 5,000 nodes and
// 50,000 allocations; "compact" times the compaction alone. Each entry
// adds 1,000 allocations: run it with a fixed -benchtime (e.g. 30x) so the
// store's size is comparable between runs. heapB/alloc is the live heap
// the entries added, per placement (what the store keeps of each);
// cpu-ns/op the process's CPU time while applying.
func BenchmarkApplyPlanResults(b *testing.B) {
	b.Run("apply", func(b *testing.B) { benchApplyPlans(b, Config{}) })
	// With the event stream's broker (no reader): what publishing costs
	// the FSM.
	b.Run("apply-events", func(b *testing.B) {
		benchApplyPlans(b, Config{Events: events.NewBroker(events.DefaultBufferSize)})
	})
	// With a reader encoding every event in the background (its CPU is
	// the process's, so cpu-ns/op includes it).
	b.Run("apply-events-reader", func(b *testing.B) {
		br := events.NewBroker(events.DefaultBufferSize)
		sub := br.Subscribe(&events.Request{Namespace: "*", Topics: map[string][]string{"*": {"*"}}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if _, err := sub.NextFrame(ctx); err != nil {
					if ctx.Err() != nil {
						return
					}
					sub = br.Subscribe(&events.Request{Namespace: "*", Topics: map[string][]string{"*": {"*"}}})
				}
			}
		}()
		benchApplyPlans(b, Config{Events: br})
		cancel()
		<-done
	})
	b.Run("compact", func(b *testing.B) {
		c := &benchCluster{byNode: make([][]string, benchNodes), job: &structs.Job{ID: "bench-job"}}
		stored := map[string]*structs.Node{}
		for i := range benchNodes {
			n := &structs.Node{ID: fmt.Sprintf("%08x-1111-2222-3333-%012x", i, i), Name: fmt.Sprintf("sim-%d", i)}
			c.nodeIDs = append(c.nodeIDs, n.ID)
			stored[n.ID] = n
		}
		l := c.planEntry(b)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			var req structs.ApplyPlanResultsRequest
			if err := structs.Decode(l.Data[1:], &req); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			compactPlanAllocs([]*structs.ApplyPlanResultsRequest{&req},
				&nodeSource{stored: func(id string) *structs.Node { return stored[id] }})
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchPlanSize), "ns/alloc")
	})
}

func benchApplyPlans(b *testing.B, cfg Config) {
	c := newBenchClusterWith(b, cfg)
	before := liveHeap()
	var cpu int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		l := c.planEntry(b)
		b.StartTimer()
		cpu0 := cpuTime(b)
		c.applyLog(b, l)
		cpu += cpuTime(b) - cpu0
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchPlanSize), "ns/alloc")
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(int64(liveHeap())-int64(before))/float64(b.N*benchPlanSize), "heapB/alloc")
	runtime.KeepAlive(c)
}

// cpuTime is the process's user+system CPU time in nanoseconds (GC
// workers included): on a shared machine it varies less than the
// elapsed time.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkApplyAllocClientUpdate times FSM.Apply of a client update
// entry (50 nodes' clients reporting 5 allocations each) into a store of
// 5,000 nodes and 50,000 allocations; cpu-ns/op is the process's CPU
// time while applying.
func BenchmarkApplyAllocClientUpdate(b *testing.B) {
	c := newBenchCluster(b)
	var cpu int64
	b.ReportAllocs()
	b.ResetTimer()
	for r := range b.N {
		b.StopTimer()
		l := c.clientEntry(b, r)
		b.StartTimer()
		cpu0 := cpuTime(b)
		c.applyLog(b, l)
		cpu += cpuTime(b) - cpu0
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*250), "ns/alloc")
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkSnapshotPersist times persisting the steady fill (5,000 nodes,
// 50,000 allocations) as a Raft snapshot, map keys sorted.
func BenchmarkSnapshotPersist(b *testing.B) {
	c := newBenchCluster(b)
	b.ReportAllocs()
	b.ResetTimer()
	var size int
	for range b.N {
		snap, err := c.f.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		sink := &countSink{}
		if err := snap.Persist(sink); err != nil {
			b.Fatal(err)
		}
		size = sink.n
	}
	b.ReportMetric(float64(size), "bytes")
}

// countSink is a raft.SnapshotSink that only counts bytes.
type countSink struct{ n int }

func (s *countSink) Write(p []byte) (int, error) { s.n += len(p); return len(p), nil }
func (s *countSink) ID() string                  { return "count" }
func (s *countSink) Cancel() error               { return nil }
func (s *countSink) Close() error                { return nil }
