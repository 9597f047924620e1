package server

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// setupRaft builds Raft: in memory in dev mode, a bolt log and file
// snapshots under <DataDir>/raft otherwise.
func (s *Server) setupRaft() error {
	cfg := s.config
	rc := cfg.RaftConfig
	if rc == nil {
		rc = raft.DefaultConfig()
		if cfg.DevMode {
			// A single dev node elects itself at once.
			rc.HeartbeatTimeout = 50 * time.Millisecond
			rc.ElectionTimeout = 50 * time.Millisecond
			rc.LeaderLeaseTimeout = 50 * time.Millisecond
			rc.CommitTimeout = 5 * time.Millisecond
		}
		rc.SnapshotThreshold = 8192
		rc.SnapshotInterval = 120 * time.Second
		rc.TrailingLogs = 10240
	}
	if cfg.RaftSnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.RaftSnapshotThreshold
	}
	if cfg.RaftSnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.RaftSnapshotInterval
	}
	if cfg.RaftTrailingLogs > 0 {
		rc.TrailingLogs = cfg.RaftTrailingLogs
	}
	// Concurrent Apply calls queue without blocking each other; the leader
	// takes all of them into one disk write (group commit).
	rc.BatchApplyCh = true
	// A server removed from the configuration (it left, was force-left or
	// pruned by autopilot while alive) keeps running so that it can be
	// added back when it rejoins, as Nomad's servers do.
	rc.ShutdownOnRemove = false
	rc.LocalID = raft.ServerID(cfg.NodeID)
	s.raftProtocol = rc.ProtocolVersion
	rc.Logger = s.logger.Named("raft")

	trans := cfg.RaftTransport
	if trans == nil {
		trans = raft.NewNetworkTransportWithLogger(s.raftLayer, 3, 10*time.Second, s.logger.Named("raft-net"))
	}
	if cfg.wrapRaftTransport != nil {
		trans = cfg.wrapRaftTransport(trans)
	}

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	if cfg.DevMode || cfg.DataDir == "" {
		store := raft.NewInmemStore()
		logs, stable = store, store
		snaps = raft.NewInmemSnapshotStore()
	} else {
		dir := filepath.Join(cfg.DataDir, "raft")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("server: creating raft dir: %w", err)
		}
		bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"),
			BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: cfg.RaftNoFreelistSync}})
		if err != nil {
			return fmt.Errorf("server: opening raft log %s: %w", filepath.Join(dir, "raft.db"), err)
		}
		s.raftStore = bolt
		logs, stable = newLogCache(512, 8<<20, bolt), bolt
		snaps, err = raft.NewFileSnapshotStoreWithLogger(dir, 2, s.logger.Named("raft-snap"))
		if err != nil {
			return fmt.Errorf("server: snapshot store: %w", err)
		}
	}

	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return err
	}
	if existing {
		s.bootstrapped.Store(true)
	}
	if !existing {
		peers := cfg.Peers
		if len(peers) == 0 && cfg.BootstrapExpect <= 1 {
			peers = []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: trans.LocalAddr()}}
		}
		if len(peers) > 0 {
			if err := raft.BootstrapCluster(rc, logs, stable, snaps, trans, raft.Configuration{Servers: peers}); err != nil {
				return fmt.Errorf("server: bootstrapping raft: %w", err)
			}
		}
	}
	r, err := raft.NewRaft(rc, s.fsm, logs, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("server: starting raft: %w", err)
	}
	s.raft = r
	s.startIndex = r.LastIndex()
	return nil
}
