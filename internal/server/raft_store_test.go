package server

import (
	"net"
	"testing"
	"time"
)

// With server.raft_boltdb.no_freelist_sync the bolt Raft log still keeps
// every write across a restart (bolt rebuilds its free-page list on open).
func TestRaftLogWithoutFreelistSyncSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() *Server {
		t.Helper()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.NodeID = "11111111-2222-3333-4444-555555555555"
		cfg.DataDir = dir
		cfg.RPCListener = ln
		cfg.NumSchedulers = 1
		cfg.RaftNoFreelistSync = true
		s, err := NewServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "leadership", func() bool { return s.IsLeader() })
		return s
	}
	s := start()
	for _, id := range []string{"a", "b", "c"} {
		register(t, s, testJob(id, 0))
	}
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	s = start()
	defer s.Shutdown()
	for _, id := range []string{"a", "b", "c"} {
		waitFor(t, 5*time.Second, "job "+id+" restored", func() bool {
			j, _ := s.State().JobByID(nil, "default", id)
			return j != nil
		})
	}
}
