package feasible

import (
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-memdb"
)

// testState serves the chain's reads from a node map and an alloc list.
type testState struct {
	nodes  map[string]*structs.Node
	allocs []*structs.Allocation
}

func newTestState(nodes ...*structs.Node) *testState {
	s := &testState{nodes: make(map[string]*structs.Node)}
	for _, n := range nodes {
		s.nodes[n.ID] = n
	}
	return s
}

func (s *testState) AllocsByNodeTerminal(_ memdb.WatchSet, nodeID string, terminal bool) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	for _, a := range s.allocs {
		if a.NodeID == nodeID && a.TerminalStatus() == terminal {
			out = append(out, a)
		}
	}
	return out, nil
}

func (s *testState) AllocsByJob(_ memdb.WatchSet, namespace, jobID string, _ bool) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	for _, a := range s.allocs {
		if a.Namespace == namespace && a.JobID == jobID {
			out = append(out, a)
		}
	}
	return out, nil
}

func (s *testState) NodeByID(_ memdb.WatchSet, id string) (*structs.Node, error) {
	return s.nodes[id], nil
}

// propNode is a node with the given meta.
func propNode(id string, meta map[string]string) *structs.Node {
	return &structs.Node{ID: id, Datacenter: "dc1", Meta: meta, Attributes: map[string]string{}}
}

// jobAlloc is a running alloc of job "j" group "g" on node.
func jobAlloc(id, node string) *structs.Allocation {
	return &structs.Allocation{ID: id, Namespace: "default", JobID: "j", TaskGroup: "g", NodeID: node,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning}
}

// nodeList yields fixed nodes.
type nodeList struct {
	nodes []*structs.Node
	i     int
}

func (l *nodeList) Next() *structs.Node {
	if l.i >= len(l.nodes) {
		return nil
	}
	l.i++
	return l.nodes[l.i-1]
}
func (l *nodeList) Reset() { l.i = 0 }

// rankList yields one fresh option per node.
func rankList(nodes ...*structs.Node) *FeasibleRankIterator {
	return &FeasibleRankIterator{source: &nodeList{nodes: nodes}}
}

func w(v int8) *int8 { return &v }
