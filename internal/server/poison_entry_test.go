package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func deeplyNested(depth int) any {
	var v any = 1
	for i := 0; i < depth; i++ {
		v = map[string]any{"a": v}
	}
	return v
}

// Issue 11, item 3: a task config nested 3,000 levels deep was committed to
// Raft and then failed to decode in the FSM (500, and `apply failed` on every
// restart). Registering, planning or validating it through the RPC
// endpoints (reachable without the HTTP API's JSON limits) is now a 400
// naming the task, and nothing is proposed.
func TestDeepTaskConfigIsRefusedBeforeRaft(t *testing.T) {
	s := testServer(t, nil)
	job := testJob("deep", 1)
	job.TaskGroups[0].Tasks[0].Config["nest"] = deeplyNested(3000)
	before := quiescentIndex(t, s)

	var reg structs.JobRegisterResponse
	err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg)
	code, msg := structs.ErrorCode(err)
	if code != 400 || !strings.Contains(msg, `task "t"`) || !strings.Contains(msg, "more than 64 levels deep") {
		t.Fatalf("register: got %d %q, want 400 naming the task's config depth", code, msg)
	}
	var plan structs.JobPlanResponse
	err = s.RPC("Job.Plan", &structs.JobPlanRequest{Job: job}, &plan)
	if code, msg := structs.ErrorCode(err); code != 400 || !strings.Contains(msg, "more than 64 levels deep") {
		t.Fatalf("plan: got %d %q", code, msg)
	}
	var val structs.JobValidateResponse
	err = s.RPC("Job.Validate", &structs.JobValidateRequest{Job: job}, &val)
	if err == nil && (val.Error == "" || !strings.Contains(val.Error, "more than 64 levels deep")) {
		t.Fatalf("validate: %+v", val)
	}
	if after := s.raft.LastIndex(); after != before {
		t.Fatalf("a refused job still wrote Raft entries: last index %d -> %d", before, after)
	}
	if j, _ := s.State().JobByID(nil, structs.DefaultNamespace, "deep"); j != nil {
		t.Fatal("the deep job was stored")
	}
}

// Any entry, whatever endpoint built it, is checked before it is proposed:
// one the FSM could not decode is refused with a 400 and never written.
func TestRaftApplyRefusesUndecodableEntries(t *testing.T) {
	s := testServer(t, nil)
	job := testJob("deep", 1)
	job.TaskGroups[0].Tasks[0].Config["nest"] = deeplyNested(3000) // as if validation had missed it
	job.Canonicalize()
	before := quiescentIndex(t, s)
	_, _, err := s.raftApply(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	code, msg := structs.ErrorCode(err)
	if code != 400 || !strings.Contains(msg, "could not read back") {
		t.Fatalf("got %d %q, want 400 refusing the entry", code, msg)
	}
	if after := s.raft.LastIndex(); after != before {
		t.Fatalf("the entry was proposed: last index %d -> %d", before, after)
	}
	// A normal entry still goes through.
	if _, _, err := s.raftApply(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("ok", 1)}); err != nil {
		t.Fatalf("a normal entry: %v", err)
	}
}

// quiescentIndex waits until the new leader's own first writes (keyring,
// cluster metadata, scheduler and autopilot configuration) are done, the
// Raft index unchanged for 300 ms, and returns it: an index taken earlier
// can move under a test that checks nothing was proposed. The writes run
// on goroutines of their own: a quiet spell alone could end before one of
// them under a loaded run, so each is waited for by what it writes.
func quiescentIndex(t *testing.T, s *Server) uint64 {
	t.Helper()
	waitFor(t, 10*time.Second, "the leader's first writes", func() bool {
		if _, err := activeRootKey(s.State(), s.keystore); err != nil {
			return false
		}
		if s.autopilot != nil {
			if c, err := s.State().AutopilotConfig(nil); err != nil || c == nil {
				return false
			}
		}
		return !s.config.ACLEnabled || s.serverSecret() != ""
	})
	last, since := s.raft.LastIndex(), time.Now()
	waitFor(t, 10*time.Second, "a quiet Raft log", func() bool {
		if idx := s.raft.LastIndex(); idx != last {
			last, since = idx, time.Now()
		}
		return time.Since(since) >= 300*time.Millisecond
	})
	return last
}
