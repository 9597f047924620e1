package client

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// fakeServer is an in-memory stand-in for the servers' client-facing RPCs.
type fakeServer struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every alloc change
	index    uint64
	ttl      time.Duration
	nodes    map[string]*structs.Node
	statuses []string // heartbeat statuses received
	allocs   map[string]*structs.Allocation
	updates  [][]*structs.Allocation // Node.UpdateAlloc batches
	failNext map[string]int          // method -> remaining failures
	failWith error                   // what those failures answer ("injected failure" when nil)
	forget   bool                    // answer "node not found" to heartbeats
	regs     int
	// regsAtForget is regs when forgetNode was last called.
	regsAtForget int

	servers []string // named in registration and heartbeat answers

	drains []*structs.NodeUpdateDrainRequest // Node.UpdateDrain calls

	noChanged bool // pulls ignore ChangedAllocs (an older server)
	getAllocs int  // Alloc.GetAllocs calls answered
}

func newFakeServer() *fakeServer {
	return &fakeServer{changed: make(chan struct{}), index: 1, ttl: 50 * time.Millisecond,
		nodes: map[string]*structs.Node{}, allocs: map[string]*structs.Allocation{}, failNext: map[string]int{}}
}

func (s *fakeServer) bump() {
	s.index++
	close(s.changed)
	s.changed = make(chan struct{})
}

// upsertAlloc adds or changes an alloc (server-owned fields).
func (s *fakeServer) upsertAlloc(a *structs.Allocation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bump()
	a = a.CopySkipJob()
	a.ModifyIndex, a.AllocModifyIndex = s.index, s.index
	if old, ok := s.allocs[a.ID]; ok {
		a.ClientStatus, a.TaskStates = old.ClientStatus, old.TaskStates
	} else {
		a.CreateIndex = s.index
	}
	s.allocs[a.ID] = a
}

func (s *fakeServer) stopAlloc(id string) {
	s.mu.Lock()
	a := s.allocs[id].CopySkipJob()
	s.mu.Unlock()
	a.DesiredStatus = structs.AllocDesiredStatusStop
	s.upsertAlloc(a)
}

func (s *fakeServer) gcAlloc(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.allocs, id)
	s.bump()
}

func (s *fakeServer) alloc(id string) *structs.Allocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.allocs[id]; a != nil {
		return a.CopySkipJob()
	}
	return nil
}

// forgetNode makes heartbeats answer "node not found" until the client
// registers again.
func (s *fakeServer) forgetNode() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget = true
	s.regsAtForget = s.regs
}

// updatesSent counts the client updates received for alloc id with status.
func (s *fakeServer) updatesSent(id, status string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.updates {
		for _, u := range b {
			if u.ID == id && u.ClientStatus == status {
				n++
			}
		}
	}
	return n
}

func (s *fakeServer) node(id string) *structs.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.nodes[id]; n != nil {
		return n.Copy()
	}
	return nil
}

func (s *fakeServer) RPC(method string, args, reply any) error {
	s.mu.Lock()
	if s.failNext[method] > 0 {
		s.failNext[method]--
		err := s.failWith
		s.mu.Unlock()
		if err == nil {
			err = errors.New("injected failure")
		}
		return err
	}
	s.mu.Unlock()
	switch method {
	case "Node.Register":
		req := args.(*structs.NodeRegisterRequest)
		s.mu.Lock()
		defer s.mu.Unlock()
		n := req.Node.Copy()
		if old := s.nodes[n.ID]; old != nil {
			if old.SecretID != n.SecretID {
				return errors.New("node secret ID does not match")
			}
			n.Status = old.Status
		}
		s.nodes[n.ID] = n
		s.regs++
		s.forget = false
		*reply.(*structs.NodeUpdateResponse) = structs.NodeUpdateResponse{HeartbeatTTL: s.ttl, Index: s.index, Servers: s.serverInfo()}
		return nil
	case "Node.UpdateStatus":
		req := args.(*structs.NodeUpdateStatusRequest)
		s.mu.Lock()
		defer s.mu.Unlock()
		n := s.nodes[req.NodeID]
		if n == nil || s.forget {
			return structs.NewErrCoded(404, "node not found")
		}
		if n.SecretID != req.SecretID {
			return errors.New("node secret ID does not match")
		}
		n.Status = req.Status
		s.statuses = append(s.statuses, req.Status)
		*reply.(*structs.NodeUpdateResponse) = structs.NodeUpdateResponse{HeartbeatTTL: s.ttl, Index: s.index, Servers: s.serverInfo()}
		return nil
	case "Node.GetClientAllocs":
		req := args.(*structs.NodeSpecificRequest)
		deadline := time.After(min(req.MaxQueryTime, 2*time.Second))
		for {
			s.mu.Lock()
			if s.nodes[req.NodeID] == nil {
				s.mu.Unlock()
				return structs.NewErrCoded(404, "node not found")
			}
			if s.index > req.MinQueryIndex {
				resp := reply.(*structs.NodeClientAllocsResponse)
				resp.Allocs = map[string]uint64{}
				for id, a := range s.allocs {
					if a.NodeID == req.NodeID {
						resp.Allocs[id] = a.AllocModifyIndex
						if req.ChangedAllocs && !s.noChanged && a.AllocModifyIndex > req.MinQueryIndex {
							resp.Changed = append(resp.Changed, a.CopySkipJob())
						}
					}
				}
				resp.Index = s.index
				s.mu.Unlock()
				return nil
			}
			ch := s.changed
			s.mu.Unlock()
			select {
			case <-ch:
			case <-deadline:
				s.mu.Lock()
				*reply.(*structs.NodeClientAllocsResponse) = structs.NodeClientAllocsResponse{Allocs: map[string]uint64{}, QueryMeta: structs.QueryMeta{Index: s.index}}
				for id, a := range s.allocs {
					if a.NodeID == req.NodeID {
						reply.(*structs.NodeClientAllocsResponse).Allocs[id] = a.AllocModifyIndex
					}
				}
				s.mu.Unlock()
				return nil
			}
		}
	case "Alloc.GetAllocs":
		req := args.(*structs.AllocsGetRequest)
		s.mu.Lock()
		defer s.mu.Unlock()
		resp := reply.(*structs.AllocsGetResponse)
		s.getAllocs++
		for _, id := range req.AllocIDs {
			if a := s.allocs[id]; a != nil {
				resp.Allocs = append(resp.Allocs, a.CopySkipJob())
			}
		}
		resp.Index = s.index
		return nil
	case "Node.UpdateDrain":
		// A drain as the servers make it, in one step: every allocation it
		// moves is stopped at once.
		req := args.(*structs.NodeUpdateDrainRequest)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.drains = append(s.drains, req)
		n := s.nodes[req.NodeID]
		if n == nil {
			return errors.New("node not found")
		}
		n.DrainStrategy = structs.DrainStrategyFor(req.DrainSpec, nil, time.Now())
		n.SchedulingEligibility = structs.NodeSchedulingIneligible
		for id, a := range s.allocs {
			system := a.Job != nil && a.Job.Type == structs.JobTypeSystem
			if a.NodeID == n.ID && !(system && req.DrainSpec.IgnoreSystemJobs) {
				c := a.CopySkipJob()
				c.DesiredStatus = structs.AllocDesiredStatusStop
				s.bump()
				c.ModifyIndex, c.AllocModifyIndex = s.index, s.index
				s.allocs[id] = c
			}
		}
		return nil
	case "Node.GetNode":
		req := args.(*structs.NodeSpecificRequest)
		s.mu.Lock()
		defer s.mu.Unlock()
		n := s.nodes[req.NodeID]
		if n != nil {
			// Complete once nothing it waits for runs on the node.
			done := true
			for _, a := range s.allocs {
				if a.NodeID == n.ID && a.DesiredStatus == structs.AllocDesiredStatusRun &&
					!(a.Job != nil && a.Job.Type == structs.JobTypeSystem && n.DrainStrategy != nil && n.DrainStrategy.IgnoreSystemJobs) {
					done = false
				}
			}
			if done {
				n.DrainStrategy = nil
			}
			reply.(*structs.SingleNodeResponse).Node = n.Copy()
		}
		return nil
	case "Node.UpdateAlloc":
		req := args.(*structs.AllocUpdateRequest)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.updates = append(s.updates, req.Alloc)
		for _, u := range req.Alloc {
			if a := s.allocs[u.ID]; a != nil {
				a.ClientStatus, a.ClientDescription, a.TaskStates = u.ClientStatus, u.ClientDescription, u.TaskStates
				if u.DeploymentStatus != nil {
					// As the state store: the client owns health and its
					// time; Canary stays the server's.
					ds := structs.AllocDeploymentStatus{}
					if a.DeploymentStatus != nil {
						ds = *a.DeploymentStatus
					}
					ds.Healthy, ds.Timestamp = u.DeploymentStatus.Healthy, u.DeploymentStatus.Timestamp
					a.DeploymentStatus = &ds
				}
			}
		}
		return nil
	}
	return fmt.Errorf("unknown method %q", method)
}

func (s *fakeServer) serverInfo() []*structs.NodeServerInfo {
	var out []*structs.NodeServerInfo
	for _, a := range s.servers {
		out = append(out, &structs.NodeServerInfo{RPCAdvertiseAddr: a, Datacenter: "dc1"})
	}
	return out
}
