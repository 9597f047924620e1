package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"
	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/structs"
)

// benchStore is a store with nodes nodes running perNode allocations each
// of one job (the steady fill's shape), and the IDs of those allocations.
func benchStore(b *testing.B, nodes, perNode int) (*StateStore, *structs.Job, []string, uint64) {
	b.Helper()
	s, err := NewStateStore()
	if err != nil {
		b.Fatal(err)
	}
	if err := s.UpsertJob(1, nil, mockJob("web")); err != nil {
		b.Fatal(err)
	}
	job, _ := s.JobByID(nil, structs.DefaultNamespace, "web")
	idx := uint64(2)
	var nodeIDs, allocIDs []string
	for n := 0; n < nodes; n++ {
		id := uuid.NewString()
		nodeIDs = append(nodeIDs, id)
		if err := s.UpsertNode(idx, mockNode(id)); err != nil {
			b.Fatal(err)
		}
		idx++
	}
	for k := 0; k < perNode; k++ {
		var allocs []*structs.Allocation
		for _, n := range nodeIDs {
			a := mockAlloc(uuid.NewString(), n, job)
			allocIDs = append(allocIDs, a.ID)
			allocs = append(allocs, a)
		}
		if err := s.UpsertAllocs(idx, allocs); err != nil {
			b.Fatal(err)
		}
		idx++
	}
	return s, job, allocIDs, idx
}

// BenchmarkAllocWrites times the two writes every placement costs the
// state store in the steady fill: its insert by a plan (a batch of 1,000)
// and a client's status update (a batch of 100), into a store of 5,000
// nodes and 50,000 allocations. The "warm" variants place on the store's
// nodes after reading every node once, as a scheduling pass and the
// clients' pulls do, so each write also keeps the touched nodes' memo
// entries current (nodeAllocsMemo.prepare).
func BenchmarkAllocWrites(b *testing.B) {
	for _, warm := range []bool{false, true} {
		suffix := ""
		if warm {
			suffix = "/warm"
		}
		b.Run("place/batch=1000"+suffix, func(b *testing.B) {
			s, job, allocIDs, idx := benchStore(b, 5000, 10)
			nodeOf := func(k int) string { return allocIDs[k%len(allocIDs)][:8] }
			if warm {
				nodeIDs := warmNodeAllocs(b, s, allocIDs, 5000)
				nodeOf = func(k int) string { return nodeIDs[k%len(nodeIDs)] }
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				allocs := make([]*structs.Allocation, 1000)
				for j := range allocs {
					allocs[j] = mockAlloc(uuid.NewString(), nodeOf(i*1000+j), job)
				}
				if err := s.UpsertAllocs(idx, allocs); err != nil {
					b.Fatal(err)
				}
				idx++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/alloc")
		})
		b.Run("client/batch=100"+suffix, func(b *testing.B) {
			s, _, allocIDs, idx := benchStore(b, 5000, 10)
			if warm {
				warmNodeAllocs(b, s, allocIDs, 5000)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				updates := make([]*structs.Allocation, 100)
				for j := range updates {
					updates[j] = &structs.Allocation{ID: allocIDs[(i*100+j)%len(allocIDs)], ClientStatus: structs.AllocClientStatusRunning,
						ClientDescription: fmt.Sprint("update ", i)}
				}
				if err := s.UpdateAllocsFromClient(idx, updates); err != nil {
					b.Fatal(err)
				}
				idx++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/alloc")
		})
	}
}

// warmNodeAllocs returns the IDs of benchStore's nodes (allocIDs[n] is on
// the n-th) after reading each node once as a scheduling pass (live
// allocations and usage) and its client's pull do.
func warmNodeAllocs(b *testing.B, s *StateStore, allocIDs []string, nodes int) []string {
	nodeIDs := make([]string, nodes)
	for n := range nodeIDs {
		a, err := s.AllocByID(nil, allocIDs[n])
		if err != nil || a == nil {
			b.Fatal("alloc missing", err)
		}
		nodeIDs[n] = a.NodeID
	}
	read := s.LiveAllocsByNodeReader()
	for _, n := range nodeIDs {
		la, err := read(n)
		if err != nil {
			b.Fatal(err)
		}
		la.Usage()
		if _, err := s.NodeClientAllocs(n, 0, false); err != nil {
			b.Fatal(err)
		}
	}
	return nodeIDs
}

// BenchmarkNodeAllocReads times the per-node reads that follow client
// status updates in the steady fill (5,000 nodes of 10 allocations): each
// round a client batch (untimed) moves one allocation on each of 100 nodes
// between pending and running, then those 100 nodes are read as a
// scheduling pass reads them (live allocations and their usage, through
// one reader of a fresh snapshot) or as their clients pull (the whole map
// with the changed allocations). "pull/unchanged" pulls 100 nodes nothing
// wrote since their last pull.
func BenchmarkNodeAllocReads(b *testing.B) {
	const nodes, perNode, touched = 5000, 10, 100
	setup := func(b *testing.B) (*StateStore, []string, []string, uint64) {
		s, _, allocIDs, idx := benchStore(b, nodes, perNode)
		return s, warmNodeAllocs(b, s, allocIDs, nodes), allocIDs, idx
	}
	// update writes round i's client batch: allocation (i*touched+j) mod
	// the total, one on each of touched consecutive nodes.
	update := func(b *testing.B, s *StateStore, allocIDs []string, i int, idx uint64) []string {
		status := structs.AllocClientStatusRunning
		if (i*touched/len(allocIDs))%2 == 1 {
			status = structs.AllocClientStatusPending
		}
		updates := make([]*structs.Allocation, touched)
		for j := range updates {
			updates[j] = &structs.Allocation{ID: allocIDs[(i*touched+j)%len(allocIDs)], ClientStatus: status}
		}
		if err := s.UpdateAllocsFromClient(idx, updates); err != nil {
			b.Fatal(err)
		}
		var ids []string
		for j := 0; j < touched; j++ {
			ids = append(ids, updates[j].ID)
		}
		return ids
	}
	nodeOf := func(nodeIDs []string, i, j int) string { return nodeIDs[(i*touched+j)%nodes] }

	// afterUpdates times read on each of the nodes an (untimed) client
	// batch touched, round after round; idx is the batch's index.
	afterUpdates := func(b *testing.B, read func(s *StateStore, idx uint64, nodeID string) error) {
		s, nodeIDs, allocIDs, idx := setup(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			update(b, s, allocIDs, i, idx)
			idx++
			b.StartTimer()
			for j := 0; j < touched; j++ {
				if err := read(s, idx, nodeOf(nodeIDs, i, j)); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*touched), "ns/node")
	}
	b.Run("sched/after-client-update", func(b *testing.B) {
		// One reader of a fresh snapshot per round, as a scheduling pass.
		var reader func(string) (*LiveAllocs, error)
		var readerIdx uint64
		afterUpdates(b, func(s *StateStore, idx uint64, nodeID string) error {
			if reader == nil || readerIdx != idx {
				snap, _ := s.Snapshot()
				reader, readerIdx = snap.LiveAllocsByNodeReader(), idx
			}
			la, err := reader(nodeID)
			if err == nil {
				la.Usage()
			}
			return err
		})
	})
	b.Run("pull/after-client-update", func(b *testing.B) {
		afterUpdates(b, func(s *StateStore, idx uint64, nodeID string) error {
			_, err := s.NodeClientAllocs(nodeID, idx-2, true)
			return err
		})
	})
	b.Run("pull/unchanged", func(b *testing.B) {
		s, nodeIDs, _, idx := setup(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for j := 0; j < touched; j++ {
				if _, err := s.NodeClientAllocs(nodeOf(nodeIDs, i, j), idx-1, true); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*touched), "ns/node")
	})
}

// BenchmarkClientPull times a client's whole pull as the steady fill sees
// it: 5,000 nodes of 10 allocations; each round a server-side write
// (untimed) moves the AllocModifyIndex of one allocation on each of 100
// nodes, as a placement or a desired-status change does, then those nodes
// pull in a shuffled order, so each pull finds its node's entries cold as
// on a busy server. "read" is the state store's part
// (NodeClientAllocs); "read+encode" also builds the answer as
// Node.GetClientAllocs does and encodes it as the RPC layer does.
func BenchmarkClientPull(b *testing.B) {
	const nodes, perNode, touched = 5000, 10, 100
	for _, encode := range []bool{false, true} {
		name := "read"
		if encode {
			name = "read+encode"
		}
		b.Run(name+"/after-placement", func(b *testing.B) {
			s, job, allocIDs, idx := benchStore(b, nodes, perNode)
			nodeIDs := warmNodeAllocs(b, s, allocIDs, nodes)
			// order[k] is the k-th node pulled: allocation order[k] (of the
			// first round of allocations) is on node order[k].
			order := rand.New(rand.NewPCG(1, 2)).Perm(nodes)
			var buf bytes.Buffer
			enc := codec.NewEncoder(&buf, structs.MsgpackHandle)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				round := make([]int, touched)
				allocs := make([]*structs.Allocation, touched)
				for j := range round {
					round[j] = order[(i*touched+j)%nodes]
					allocs[j] = mockAlloc(allocIDs[round[j]], nodeIDs[round[j]], job)
				}
				if err := s.UpsertAllocs(idx, allocs); err != nil {
					b.Fatal(err)
				}
				idx++
				b.StartTimer()
				for _, n := range round {
					pull, err := s.NodeClientAllocs(nodeIDs[n], idx-2, true)
					if err != nil || pull.Node == nil || len(pull.Changed) != 1 {
						b.Fatal("bad pull", err)
					}
					if !encode {
						continue
					}
					reply := benchReply(pull)
					buf.Reset()
					if err := enc.Encode(reply); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*touched), "ns/pull")
		})
	}
}

// benchReply builds a pull's answer as Node.clientAllocs does.
func benchReply(pull ClientPull) *structs.NodeClientAllocsResponse {
	reply := &structs.NodeClientAllocsResponse{Changed: pull.Changed}
	reply.SetAllocsOf(pull.All)
	reply.Index = max(pull.Index, 1)
	return reply
}
