package feasible

import "github.com/drover-project/drover/internal/structs"

// coreAllocator hands out a node's free reservable cores to the tasks of
// one candidate allocation (`resources { cores = N }`): the lowest free
// IDs, none held by a live proposed allocation.
type coreAllocator struct {
	free []uint16
}

func newCoreAllocator(n *structs.Node, proposed []*structs.Allocation) *coreAllocator {
	held := structs.HeldCores(proposed)
	var free []uint16
	for _, c := range n.ReservableCores() {
		if !held[c] {
			free = append(free, c)
		}
	}
	return &coreAllocator{free: free}
}

// take reserves n cores, or returns nil when fewer are free.
func (c *coreAllocator) take(n int) []uint16 {
	if n <= 0 || n > len(c.free) {
		return nil
	}
	ids := append([]uint16(nil), c.free[:n]...)
	c.free = c.free[n:]
	return ids
}
