package server

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// fakeRestartClient plays the client of node for job's allocations: it
// reports new ones running and answers each new in-place restart request
// once (Restart Signaled with the index, then running again).
type fakeRestartClient struct {
	mu       sync.Mutex
	answered map[string][]uint64 // alloc ID -> restart indexes answered
	stop     chan struct{}
	done     chan struct{}
}

func startFakeRestartClient(t *testing.T, servers []*Server, nodeID, jobID string) *fakeRestartClient {
	c := &fakeRestartClient{answered: map[string][]uint64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			select {
			case <-c.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			l := currentLeader(servers)
			if l == nil {
				continue
			}
			allocs, err := l.State().AllocsByJob(nil, "default", jobID, false)
			if err != nil {
				continue
			}
			var ups []*structs.Allocation
			now := time.Now()
			for _, a := range allocs {
				if a.NodeID != nodeID || a.TerminalStatus() {
					continue
				}
				c.mu.Lock()
				done := c.answered[a.ID]
				c.mu.Unlock()
				last := uint64(0)
				if len(done) > 0 {
					last = done[len(done)-1]
				}
				switch {
				case a.RestartRequest != nil && a.RestartRequest.Index > last:
					ev := &structs.TaskEvent{Type: structs.TaskRestartSignaled, Time: now.UnixNano(),
						Details: map[string]string{structs.TaskEventDetailRestartIndex: fmt.Sprint(a.RestartRequest.Index)}}
					ups = append(ups, &structs.Allocation{ID: a.ID, NodeID: nodeID, ClientStatus: structs.AllocClientStatusRunning,
						TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: now.Add(time.Millisecond),
							Restarts: uint64(len(done) + 1), Events: []*structs.TaskEvent{ev}}}})
					c.mu.Lock()
					c.answered[a.ID] = append(c.answered[a.ID], a.RestartRequest.Index)
					c.mu.Unlock()
				case a.ClientStatus == structs.AllocClientStatusPending:
					ups = append(ups, &structs.Allocation{ID: a.ID, NodeID: nodeID, ClientStatus: structs.AllocClientStatusRunning,
						TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: now}}})
				}
			}
			if len(ups) > 0 {
				var r structs.GenericResponse
				if err := l.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: ups}, &r); err != nil {
					// Leadership moving: the next round sends again.
					c.mu.Lock()
					for _, u := range ups {
						if n := len(c.answered[u.ID]); n > 0 && u.TaskStates["t"].Restarts == uint64(n) {
							c.answered[u.ID] = c.answered[u.ID][:n-1]
						}
					}
					c.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { close(c.stop); <-c.done })
	return c
}

func jobRestartOn(servers []*Server, jobID string) *structs.JobRestart {
	l := currentLeader(servers)
	if l == nil {
		return nil
	}
	r, _ := l.State().JobRestartByJob(nil, "default", jobID)
	return r
}

// A rolling restart survives a change of leader: the new leader carries on
// from the record in state, and every allocation is restarted exactly once.
func TestJobRestartSurvivesLeaderChange(t *testing.T) {
	servers := testCluster(t, 3)
	first := waitLeader(t, servers, 10*time.Second, "a leader")
	node := testNode(t, first, 8000, 8000)
	job := testJob("roll", 4)
	var jr structs.JobRegisterResponse
	if err := first.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &jr); err != nil {
		t.Fatal(err)
	}
	fc := startFakeRestartClient(t, servers, node.ID, "roll")
	waitFor(t, 10*time.Second, "4 running allocations", func() bool {
		allocs, _ := first.State().AllocsByJob(nil, "default", "roll", false)
		n := 0
		for _, a := range allocs {
			if a.ClientStatus == structs.AllocClientStatusRunning {
				n++
			}
		}
		return n == 4
	})

	// The wait between batches keeps the restart running through the
	// leader change: after batch 2 two more waits remain, 3 s, where a
	// transfer and the new leader's establishment take well under one
	// (with 300 ms waits a loaded race run could see it finish first).
	var resp structs.JobRestartResponse
	err := first.RPC("Job.Restart", &structs.JobRestartStartRequest{JobID: "roll",
		Spec: structs.JobRestartSpec{BatchSize: 1, BatchWait: 1500 * time.Millisecond}}, &resp)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Restart == nil || len(resp.Restart.Allocs) != 4 || resp.Restart.Status != structs.JobRestartStatusRunning {
		t.Fatalf("started: %+v", resp.Restart)
	}
	// A second restart of the same job is refused while this one runs.
	var again structs.JobRestartResponse
	if err := first.RPC("Job.Restart", &structs.JobRestartStartRequest{JobID: "roll"}, &again); err == nil {
		t.Fatal("a second concurrent restart was accepted")
	}

	waitFor(t, 10*time.Second, "the second batch", func() bool {
		r := jobRestartOn(servers, "roll")
		return r != nil && r.Batch >= 2
	})
	if err := first.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a new leader", func() bool {
		l := currentLeader(servers)
		return l != nil && l != first && l.IsLeader()
	})
	if r := jobRestartOn(servers, "roll"); r == nil || r.Status != structs.JobRestartStatusRunning {
		t.Fatalf("restart after the leader change: %+v", r)
	}
	waitFor(t, 20*time.Second, "the restart to complete under the new leader", func() bool {
		r := jobRestartOn(servers, "roll")
		return r != nil && r.Status == structs.JobRestartStatusComplete
	})
	r := jobRestartOn(servers, "roll")
	if r.Batch != 4 {
		t.Fatalf("batches %d, want 4: %+v", r.Batch, r)
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if len(fc.answered) != 4 {
		t.Fatalf("%d allocations restarted, want 4", len(fc.answered))
	}
	for id, idx := range fc.answered {
		if len(idx) != 1 || idx[0] != 1 {
			t.Fatalf("alloc %s restarted for indexes %v, want exactly [1]", id, idx)
		}
	}
	for _, ra := range r.Allocs {
		if ra.Status != structs.JobRestartAllocDone {
			t.Fatalf("alloc %s: %s %s", ra.AllocID, ra.Status, ra.Error)
		}
	}
}

// Cancel stops a restart between batches; nothing more is restarted.
func TestJobRestartCancel(t *testing.T) {
	s := testServer(t, nil)
	node := testNode(t, s, 8000, 8000)
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob("c", 3)}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	fc := startFakeRestartClient(t, []*Server{s}, node.ID, "c")
	waitFor(t, 10*time.Second, "3 running allocations", func() bool {
		allocs, _ := s.State().AllocsByJob(nil, "default", "c", false)
		n := 0
		for _, a := range allocs {
			if a.ClientStatus == structs.AllocClientStatusRunning {
				n++
			}
		}
		return n == 3
	})
	var resp structs.JobRestartResponse
	if err := s.RPC("Job.Restart", &structs.JobRestartStartRequest{JobID: "c",
		Spec: structs.JobRestartSpec{BatchSize: 1, BatchWaitAsk: true}}, &resp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the pause after batch 1", func() bool {
		r, _ := s.State().JobRestartByJob(nil, "default", "c")
		return r.Status == structs.JobRestartStatusPaused
	})
	if err := s.RPC("Job.RestartControl", &structs.JobRestartControlRequest{JobID: "c", Resume: true}, &resp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the pause after batch 2", func() bool {
		r, _ := s.State().JobRestartByJob(nil, "default", "c")
		return r.Status == structs.JobRestartStatusPaused && r.Batch == 2
	})
	if err := s.RPC("Job.RestartControl", &structs.JobRestartControlRequest{JobID: "c"}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Restart.Status != structs.JobRestartStatusCanceled {
		t.Fatalf("after cancel: %s", resp.Restart.Status)
	}
	err := s.RPC("Job.RestartControl", &structs.JobRestartControlRequest{JobID: "c"}, &resp)
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "no restart in progress") {
		t.Fatalf("cancel of nothing: %v", err)
	}
	fc.mu.Lock()
	n := len(fc.answered)
	fc.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d allocations restarted, want the 2 of the batches before the cancel", n)
	}
}

// Bad requests are 4xx naming what is wrong.
func TestJobRestartRefusals(t *testing.T) {
	s := testServer(t, nil)
	sys := testJob("sys", 1)
	sys.Type = structs.JobTypeSystem
	for _, j := range []*structs.Job{testJob("web", 1), sys} {
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: j}, &structs.JobRegisterResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		job  string
		spec structs.JobRestartSpec
		want string
	}{
		{"nope", structs.JobRestartSpec{}, "404"},
		{"sys", structs.JobRestartSpec{Reschedule: true}, `Reschedule: jobs of type "system" cannot be rescheduled`},
		{"web", structs.JobRestartSpec{Group: "other"}, `Group: job "web" has no group "other"`},
		{"web", structs.JobRestartSpec{OnError: "maybe"}, "OnError"},
		{"web", structs.JobRestartSpec{}, "has no running allocations to restart"}, // nothing placed: no node
	} {
		var resp structs.JobRestartResponse
		err := s.RPC("Job.Restart", &structs.JobRestartStartRequest{JobID: tc.job, Spec: tc.spec}, &resp)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: %v, want %q", tc.job, tc.spec, err, tc.want)
		}
	}
}
