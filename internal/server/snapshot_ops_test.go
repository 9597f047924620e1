package server

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/snapshot"
	"github.com/drover-project/drover/internal/structs"
)

func jobExists(t *testing.T, s *Server, id string) bool {
	t.Helper()
	j, err := s.State().JobByID(nil, "default", id)
	if err != nil {
		t.Fatal(err)
	}
	return j != nil
}

func saveSnapshot(t *testing.T, via *Server) []byte {
	t.Helper()
	var reply structs.SnapshotSaveResponse
	if err := via.RPC("Operator.SnapshotSave", &structs.SnapshotSaveRequest{}, &reply); err != nil {
		t.Fatalf("snapshot save: %v", err)
	}
	if len(reply.Archive) == 0 || reply.SnapshotIndex == 0 {
		t.Fatalf("empty snapshot: %d bytes at index %d", len(reply.Archive), reply.SnapshotIndex)
	}
	return reply.Archive
}

// A snapshot saved, then restored after more writes, brings the state back
// to what it held, and the leader services run again from it: a job
// registered after the restore is scheduled.
func TestSnapshotSaveRestore(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	evalDone(t, s, register(t, s, testJob("kept", 1)).EvalID)
	archive := saveSnapshot(t, s)

	meta, state, err := snapshot.Read(bytes.NewReader(archive), 0)
	if err != nil {
		t.Fatalf("reading the saved archive: %v", err)
	}
	if meta.Index == 0 || meta.Term == 0 || len(state) == 0 {
		t.Fatalf("archive meta %+v, %d state bytes", meta, len(state))
	}

	evalDone(t, s, register(t, s, testJob("dropped", 1)).EvalID)
	established := s.establishCount.Load()
	var reply structs.GenericResponse
	if err := s.RPC("Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Archive: archive}, &reply); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if !jobExists(t, s, "kept") || jobExists(t, s, "dropped") {
		t.Fatalf("after restore: kept %v, dropped %v", jobExists(t, s, "kept"), jobExists(t, s, "dropped"))
	}
	if len(liveAllocs(t, s, "kept")) != 1 || len(allocsOf(t, s, "dropped")) != 0 {
		t.Fatalf("allocations after restore: kept %d, dropped %d", len(liveAllocs(t, s, "kept")), len(allocsOf(t, s, "dropped")))
	}
	waitFor(t, 10*time.Second, "leader services restarted", func() bool {
		return s.establishCount.Load() > established && s.servicesUp.Load() == 1
	})
	ev := evalDone(t, s, register(t, s, testJob("after", 1)).EvalID)
	if ev.Status != structs.EvalStatusComplete || len(liveAllocs(t, s, "after")) != 1 {
		t.Fatalf("job after restore: eval %s, %d allocations", ev.Status, len(liveAllocs(t, s, "after")))
	}
}

// rewriteArchive rebuilds an archive with state replaced and checksums that
// match, as a tool that edits one would.
func rewriteArchive(t *testing.T, archive []byte, edit func(state []byte) []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
	files["state.bin"] = edit(files["state.bin"])
	sum := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	files["SHA256SUMS"] = []byte(fmt.Sprintf("%s  meta.json\n%s  state.bin\n", sum(files["meta.json"]), sum(files["state.bin"])))
	var out bytes.Buffer
	gw := gzip.NewWriter(&out)
	tw := tar.NewWriter(gw)
	for _, name := range []string{"meta.json", "state.bin", "SHA256SUMS"} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(files[name])), Typeflag: tar.TypeReg})
		tw.Write(files[name])
	}
	tw.Close()
	gw.Close()
	return out.Bytes()
}

// A bad archive is refused with a 400 that says why, and the state is left
// as it was: garbage, a checksum that does not match, and a state stream
// the FSM could not load (checked before Raft keeps it).
func TestSnapshotRestoreRefusesBadArchives(t *testing.T) {
	s := testServer(t, nil)
	evalDone(t, s, register(t, s, testJob("kept", 0)).EvalID)
	archive := saveSnapshot(t, s)
	flipped := append([]byte(nil), archive...)
	flipped[len(flipped)/2] ^= 0xff
	for name, tc := range map[string]struct {
		archive []byte
		want    string
	}{
		"garbage":   {[]byte("not a snapshot"), "not gzip"},
		"empty":     {nil, "missing snapshot archive"},
		"corrupted": {flipped, "not valid"},
		"truncated state": {rewriteArchive(t, archive, func(b []byte) []byte { return b[:len(b)-7] }),
			"cannot be restored"},
	} {
		var reply structs.GenericResponse
		err := s.RPC("Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Archive: tc.archive}, &reply)
		if code, _ := structs.ErrorCode(err); err == nil || code != 400 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (code %d), want a 400 containing %q", name, err, code, tc.want)
		}
	}
	if !jobExists(t, s, "kept") {
		t.Fatal("a refused restore changed the state")
	}
	evalDone(t, s, register(t, s, testJob("still-writable", 0)).EvalID)
}

// Through a follower: save and restore are forwarded to the leader, and
// the restored state reaches every server.
func TestSnapshotRestoreThroughFollower(t *testing.T) {
	servers := testCluster(t, 3)
	leader := waitLeader(t, servers, 10*time.Second, "a leader")
	var follower *Server
	for _, s := range servers {
		if s != leader {
			follower = s
		}
	}
	register(t, follower, testJob("kept", 0))
	archive := saveSnapshot(t, follower)
	register(t, follower, testJob("dropped", 0))
	var reply structs.GenericResponse
	if err := follower.RPC("Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Archive: archive}, &reply); err != nil {
		t.Fatalf("restore through a follower: %v", err)
	}
	waitFor(t, 15*time.Second, "every server holds the restored state", func() bool {
		for _, s := range servers {
			if !jobExists(t, s, "kept") || jobExists(t, s, "dropped") {
				return false
			}
		}
		return true
	})
	register(t, follower, testJob("after", 0))
}

// Leadership moves to the server named by ID or by address, asked through
// any server; naming no server, an unknown one or the leader itself is a
// 400.
func TestTransferLeadership(t *testing.T) {
	servers := testCluster(t, 3)
	for round := 0; round < 2; round++ {
		leader := waitLeader(t, servers, 10*time.Second, "a leader")
		var target, via *Server
		for _, s := range servers {
			if s != leader && target == nil {
				target = s
			} else if s != leader {
				via = s
			}
		}
		args := &structs.RaftPeerRequest{ID: target.config.NodeID}
		if round == 1 {
			args = &structs.RaftPeerRequest{Address: target.RPCAddr()}
		}
		var reply struct{}
		if err := via.RPC("Operator.TransferLeadershipToPeer", args, &reply); err != nil {
			t.Fatalf("round %d: transfer to %s: %v", round, target.config.NodeName, err)
		}
		waitFor(t, 10*time.Second, "the target leads", func() bool { return target.IsLeader() && currentLeader(servers) == target })
	}
	leader := waitLeader(t, servers, 10*time.Second, "a leader")
	for name, args := range map[string]*structs.RaftPeerRequest{
		"none":    {},
		"both":    {ID: "x", Address: "y"},
		"unknown": {ID: "no-such-server"},
		"itself":  {ID: leader.config.NodeID},
	} {
		var reply struct{}
		err := leader.RPC("Operator.TransferLeadershipToPeer", args, &reply)
		if code, _ := structs.ErrorCode(err); err == nil || code != 400 {
			t.Errorf("%s: %v (code %d), want 400", name, err, code)
		}
	}
}

// A server that comes back with an empty data dir (replaced, or new with
// the same identity) after the leader compacted its log (low
// raft_snapshot_threshold and raft_trailing_logs) catches up from the
// leader's snapshot and serves the data written while it was away.
func TestServerCatchesUpFromLeaderSnapshot(t *testing.T) {
	var addrs []string
	servers := testClusterWith(t, 3, func(i int, cfg *Config) {
		// Raft on disk: a bolt log and file snapshots, as a real server.
		cfg.DevMode, cfg.DataDir = false, t.TempDir()
		cfg.RaftSnapshotThreshold = 16
		cfg.RaftTrailingLogs = 4
		cfg.RaftSnapshotInterval = 50 * time.Millisecond
		addrs = append(addrs, cfg.RPCListener.Addr().String())
	})
	leader := waitLeader(t, servers, 10*time.Second, "a leader")
	var gone *Server
	goneIdx := 0
	for i, s := range servers {
		if s != leader {
			gone, goneIdx = s, i
			break
		}
	}
	goneCfg := *gone.config
	gone.Shutdown()

	live := []*Server{}
	for _, s := range servers {
		if s != gone {
			live = append(live, s)
		}
	}
	for i := 0; i < 60; i++ {
		registerRetrying(t, live, testJob(fmt.Sprintf("while-away-%d", i), 0))
	}
	var snapIdx uint64
	waitFor(t, 20*time.Second, "the leader snapshots and compacts its log", func() bool {
		if l := currentLeader(live); l != nil {
			leader = l
		}
		fmt.Sscan(leader.raft.Stats()["last_snapshot_index"], &snapIdx)
		return snapIdx > 20
	})

	// The same server, back with an empty (in-memory) log.
	var ln net.Listener
	waitFor(t, 10*time.Second, "the old address free again", func() bool {
		var err error
		ln, err = net.Listen("tcp", addrs[goneIdx])
		return err == nil
	})
	cfg := goneCfg
	cfg.RPCListener = ln
	cfg.DataDir = t.TempDir() // its log and snapshots are gone
	rc := *goneCfg.RaftConfig
	cfg.RaftConfig = &rc
	back, err := NewServer(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Shutdown() })
	waitFor(t, 20*time.Second, "the returning server installs the leader's snapshot", func() bool {
		var idx uint64
		fmt.Sscan(back.raft.Stats()["last_snapshot_index"], &idx)
		return idx >= snapIdx && jobExists(t, back, "while-away-59") && jobExists(t, back, "while-away-0")
	})
	// And it keeps following: a write after the catch-up reaches it.
	registerRetrying(t, []*Server{back}, testJob("after-catch-up", 0))
	waitFor(t, 10*time.Second, "a later write on the returning server", func() bool { return jobExists(t, back, "after-catch-up") })
	if back.raft.State() == raft.Shutdown {
		t.Fatal("returning server shut down")
	}
}

// registerRetrying registers job through the first of servers that takes
// it, retrying while leadership moves (a short election under -race). A
// registration whose leadership was lost while committing may or may not
// have been applied: registering the same job again is harmless here (the
// tests only look for the job), so it is retried too.
func registerRetrying(t *testing.T, servers []*Server, job *structs.Job) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		var resp structs.JobRegisterResponse
		err := servers[i%len(servers)].RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp)
		if err == nil {
			return
		}
		if (err.Error() != structs.ErrNoLeader.Error() && !structs.IsOutcomeUnknown(err)) || time.Now().After(deadline) {
			t.Fatalf("registering %s: %v", job.ID, err)
		}
	}
}

// A restore wakes the blocking queries parked on the replaced state: a
// client's allocation watch (parked at an index the restored state is
// below) is answered at once with the restored allocations, so the client
// stops what the restored state no longer holds, and a list watched with
// ?index= answers too. Before, both slept on until their wait ran out
// (a client's: 5 minutes), the client running a job the cluster no longer
// knew.
func TestSnapshotRestoreWakesParkedBlockingQueries(t *testing.T) {
	s := testServer(t, nil)
	n := testNode(t, s, 4000, 4096)
	evalDone(t, s, register(t, s, testJob("kept", 1)).EvalID)
	archive := saveSnapshot(t, s)
	evalDone(t, s, register(t, s, testJob("dropped", 1)).EvalID)

	var now structs.NodeClientAllocsResponse
	req := &structs.NodeSpecificRequest{NodeID: n.ID, SecretID: n.SecretID}
	if err := s.RPC("Node.GetClientAllocs", req, &now); err != nil || len(now.Allocs) != 2 {
		t.Fatalf("allocations before the restore: %v, %v", err, now.Allocs)
	}
	var jobs structs.JobListResponse
	if err := s.RPC("Job.List", &structs.JobListRequest{}, &jobs); err != nil || len(jobs.Jobs) != 2 {
		t.Fatalf("jobs before the restore: %v, %d", err, len(jobs.Jobs))
	}

	const wait = time.Minute
	type answer struct {
		err    error
		allocs int
		jobs   int
	}
	allocCh, jobCh := make(chan answer, 1), make(chan answer, 1)
	go func() {
		var r structs.NodeClientAllocsResponse
		parked := &structs.NodeSpecificRequest{NodeID: n.ID, SecretID: n.SecretID,
			QueryOptions: structs.QueryOptions{MinQueryIndex: now.Index, MaxQueryTime: wait}}
		err := s.RPC("Node.GetClientAllocs", parked, &r)
		allocCh <- answer{err: err, allocs: len(r.Allocs)}
	}()
	go func() {
		var r structs.JobListResponse
		parked := &structs.JobListRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: jobs.Index, MaxQueryTime: wait}}
		err := s.RPC("Job.List", parked, &r)
		jobCh <- answer{err: err, jobs: len(r.Jobs)}
	}()
	// Both parked (nothing changes until the restore).
	select {
	case a := <-allocCh:
		t.Fatalf("allocation watch answered before the restore: %+v", a)
	case a := <-jobCh:
		t.Fatalf("job list answered before the restore: %+v", a)
	case <-time.After(300 * time.Millisecond):
	}

	var reply structs.GenericResponse
	if err := s.RPC("Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Archive: archive}, &reply); err != nil {
		t.Fatalf("restore: %v", err)
	}
	deadline := time.After(20 * time.Second)
	for _, ch := range []chan answer{allocCh, jobCh} {
		select {
		case a := <-ch:
			if a.err != nil {
				t.Fatalf("parked query after the restore: %v", a.err)
			}
			if ch == allocCh && a.allocs != 1 {
				t.Fatalf("allocation watch after the restore: %d allocations, want the 1 of job kept", a.allocs)
			}
			if ch == jobCh && a.jobs != 1 {
				t.Fatalf("job list after the restore: %d jobs, want 1", a.jobs)
			}
		case <-deadline:
			t.Fatal("a blocking query parked before the restore was not answered: it sleeps on until its wait runs out")
		}
	}
}

// A blocking query that starts after a restore, with an index the replaced
// state gave out (above everything the restored state holds), is answered
// at once with the restored data and index. Before, it waited its whole
// time: only new writes pass that index, and until then the caller kept
// what the restore had removed.
func TestBlockingQueryAfterRestoreWithAnIndexFromBeforeIsAnswered(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	evalDone(t, s, register(t, s, testJob("kept", 1)).EvalID)
	archive := saveSnapshot(t, s)
	evalDone(t, s, register(t, s, testJob("dropped", 1)).EvalID)
	var jobs structs.JobListResponse
	if err := s.RPC("Job.List", &structs.JobListRequest{}, &jobs); err != nil || len(jobs.Jobs) != 2 {
		t.Fatalf("jobs before the restore: %v, %d", err, len(jobs.Jobs))
	}
	var reply structs.GenericResponse
	if err := s.RPC("Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Archive: archive}, &reply); err != nil {
		t.Fatalf("restore: %v", err)
	}
	latest, err := s.State().LatestIndex()
	if err != nil {
		t.Fatal(err)
	}
	if latest >= jobs.Index {
		t.Skipf("the restored state (index %d) is already past the old index %d", latest, jobs.Index)
	}
	done := make(chan error, 1)
	var r structs.JobListResponse
	go func() {
		done <- s.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{
			MinQueryIndex: jobs.Index, MaxQueryTime: time.Minute}}, &r)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Jobs) != 1 || r.Index >= jobs.Index {
			t.Fatalf("answer after the restore: %d jobs at index %d, want the 1 restored job below %d", len(r.Jobs), r.Index, jobs.Index)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a blocking query with an index from before the restore waits for its whole time")
	}
}
