package state

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

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
// nodes and 50,000 allocations.
func BenchmarkAllocWrites(b *testing.B) {
	b.Run("place/batch=1000", func(b *testing.B) {
		s, job, allocIDs, idx := benchStore(b, 5000, 10)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			allocs := make([]*structs.Allocation, 1000)
			for j := range allocs {
				allocs[j] = mockAlloc(uuid.NewString(), allocIDs[(i*1000+j)%len(allocIDs)][:8], job)
			}
			if err := s.UpsertAllocs(idx, allocs); err != nil {
				b.Fatal(err)
			}
			idx++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/alloc")
	})
	b.Run("client/batch=100", func(b *testing.B) {
		s, _, allocIDs, idx := benchStore(b, 5000, 10)
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
