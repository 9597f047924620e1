package server

import (
	"github.com/hashicorp/raft"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// healthyClients plays the clients of every node: a pending allocation
// the servers want running is reported running and, when it belongs to a
// deployment, healthy; one they stopped is reported complete.
func healthyClients(t *testing.T, s *Server, jobID string) {
	t.Helper()
	now := time.Now()
	byNode := map[string][]*structs.Allocation{}
	for _, a := range allocsOf(t, s, jobID) {
		up := &structs.Allocation{ID: a.ID, NodeID: a.NodeID}
		switch {
		case a.DesiredStatus != structs.AllocDesiredStatusRun && !a.ClientTerminalStatus():
			up.ClientStatus = structs.AllocClientStatusComplete
		case a.DesiredStatus == structs.AllocDesiredStatusRun && a.ClientStatus == structs.AllocClientStatusPending:
			up.ClientStatus = structs.AllocClientStatusRunning
			up.TaskStates = map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: now}}
		case a.DesiredStatus == structs.AllocDesiredStatusRun && a.DeploymentID != "" &&
			(a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil):
			healthy := true
			up.ClientStatus = a.ClientStatus
			up.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: now}
		default:
			continue
		}
		byNode[a.NodeID] = append(byNode[a.NodeID], up)
	}
	for _, list := range byNode {
		var r structs.GenericResponse
		s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: list}, &r) // a lost leader refuses: the next round retries
	}
}

// A rolling update (max_parallel 1, a destructive change) is halfway when
// leadership moves: the new leader's scheduler and deployment watcher carry
// it on from state to the same outcome, every allocation on the new version
// and the deployment successful, never more than max_parallel replaced at
// once.
func TestRollingUpdateSurvivesLeaderChange(t *testing.T) {
	servers := testCluster(t, 3)
	leader := waitLeader(t, servers, 10*time.Second, "first leader")
	for i := 0; i < 3; i++ {
		testNode(t, leader, 4000, 8192)
	}
	job := testJob("web", 3)
	one, zero := 1, time.Duration(0)
	// Set on the group, as the API's canonicalization leaves it.
	job.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: &one, MinHealthyTime: &zero}
	register(t, leader, job)
	settled := func(s *Server, version uint64) bool {
		healthyClients(t, s, "web")
		d, _ := s.State().LatestDeploymentByJobID(nil, "default", "web")
		return d != nil && d.JobVersion == version && d.Status == structs.DeploymentStatusSuccessful
	}
	deadline := time.Now().Add(20 * time.Second)
	for !settled(leader, 0) {
		if time.Now().After(deadline) {
			d, _ := leader.State().LatestDeploymentByJobID(nil, "default", "web")
			for _, a := range allocsOf(t, leader, "web") {
				t.Logf("alloc %s %s/%s dep %s status %+v", a.Name, a.DesiredStatus, a.ClientStatus, a.DeploymentID, a.DeploymentStatus)
			}
			if d != nil {
				t.Fatalf("deployment %s %s: %+v", d.Status, d.StatusDescription, d.TaskGroups["web"])
			}
			t.Fatal("no deployment")
		}
		time.Sleep(20 * time.Millisecond)
	}

	v1 := testJob("web", 3)
	v1.TaskGroups[0].Update = job.TaskGroups[0].Update
	v1.Meta = map[string]string{"release": "2"}
	register(t, leader, v1)
	onNew := func(s *Server) (healthy, inFlight int) {
		for _, a := range allocsOf(t, s, "web") {
			if a.DesiredStatus != structs.AllocDesiredStatusRun || a.Job == nil || a.Job.Version != 1 {
				continue
			}
			if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy {
				healthy++
			} else {
				inFlight++
			}
		}
		return
	}
	waitFor(t, 20*time.Second, "the first replacement healthy", func() bool {
		healthyClients(t, leader, "web")
		h, _ := onNew(leader)
		return h >= 1
	})
	if h, _ := onNew(leader); h == 3 {
		t.Fatal("the rollout finished before the leader change: nothing to resume")
	}

	// Under load an election may already have moved leadership: transfer
	// it from whichever server leads now, so the rollout resumes under a
	// different one either way.
	old := leader
	waitFor(t, 10*time.Second, "a leadership transfer", func() bool {
		if cur := currentLeader(servers); cur != nil && cur != old {
			return true
		}
		err := old.raft.LeadershipTransfer().Error()
		if err != nil && err != raft.ErrNotLeader {
			t.Fatal(err)
		}
		return err == nil
	})
	waitFor(t, 10*time.Second, "a new leader", func() bool {
		leader = currentLeader(servers)
		return leader != nil && leader != old && leader.IsLeader()
	})
	waitFor(t, 30*time.Second, "version 1's deployment successful under the new leader", func() bool {
		if _, inFlight := onNew(leader); inFlight > 1 {
			t.Fatalf("%d allocations being replaced at once (max_parallel 1)", inFlight)
		}
		return settled(leader, 1)
	})
	live := 0
	for _, a := range allocsOf(t, leader, "web") {
		if a.DesiredStatus == structs.AllocDesiredStatusRun {
			live++
			if a.Job.Version != 1 {
				t.Fatalf("%s still on version %d", a.Name, a.Job.Version)
			}
		}
	}
	if live != 3 {
		t.Fatalf("%d live allocations, want 3", live)
	}
	if j, _ := leader.State().JobByIDAndVersion(nil, "default", "web", 1); j == nil || !j.Stable {
		t.Fatal("version 1 not marked stable after its successful deployment")
	}
}
