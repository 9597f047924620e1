package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/fsm"
	"github.com/drover-project/drover/internal/snapshot"
	"github.com/drover-project/drover/internal/structs"
)

// MaxSnapshotBytes bounds the FSM state a restore accepts (the archive is
// held in memory while it is checked and handed to Raft).
const MaxSnapshotBytes = 2 << 30

// snapshotRestoreTimeout bounds how long Raft may take to install a
// restored snapshot.
const snapshotRestoreTimeout = structs.SnapshotOpWait

// SnapshotArchive takes a Raft snapshot of this server's state and returns
// it as an archive (internal/snapshot) with the index it was taken at.
func (s *Server) SnapshotArchive() (*snapshot.Meta, []byte, error) {
	f := s.raft.Snapshot()
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNothingNewToSnapshot) {
			return nil, nil, structs.NewErrCoded(500, "nothing to snapshot yet: the Raft log is empty")
		}
		return nil, nil, fmt.Errorf("taking a Raft snapshot: %w", err)
	}
	rm, rc, err := f.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("opening the Raft snapshot: %w", err)
	}
	defer rc.Close()
	state, err := io.ReadAll(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the Raft snapshot: %w", err)
	}
	meta := snapshot.FromRaft(rm, time.Now())
	var buf bytes.Buffer
	if err := snapshot.Write(&buf, meta, state); err != nil {
		return nil, nil, err
	}
	meta.Size = int64(len(state))
	return meta, buf.Bytes(), nil
}

// RestoreArchive replaces the cluster's state with an archive: checked
// whole first (a state Raft would keep but the FSM could not load is
// refused with 400), then handed to Raft on the leader, which installs it
// on every follower; the leader-only services are then rebuilt from the
// restored state. It returns the Raft index after the restore.
func (s *Server) RestoreArchive(archive []byte) (uint64, error) {
	if !s.IsLeader() {
		return 0, structs.ErrNoLeader
	}
	meta, state, err := snapshot.Read(bytes.NewReader(archive), MaxSnapshotBytes)
	if err != nil {
		return 0, structs.NewErrCoded(400, "%v", err)
	}
	if _, err := fsm.CheckSnapshot(bytes.NewReader(state)); err != nil {
		return 0, structs.NewErrCoded(400, "snapshot state cannot be restored: %v", err)
	}
	s.logger.Warn("restoring a snapshot: the cluster's state is replaced", "snapshot_index", meta.Index, "snapshot_term", meta.Term, "bytes", len(state))
	if err := s.raft.Restore(meta.RaftMeta(), bytes.NewReader(state), snapshotRestoreTimeout); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			// ErrNotLeader: never started. ErrLeadershipLost: the
			// restore may or may not have been applied.
			return 0, applyError(err)
		}
		return 0, fmt.Errorf("restoring the snapshot: %w", err)
	}
	// Everything the leader services hold (broker, blocked evals, heartbeat
	// timers, periodic launches, watched deployments) came from the old
	// state: start them again from the new one.
	s.reassertLeadership()
	return s.raft.LastIndex(), nil
}

// reassertLeadership asks the leadership monitor to tear the leader
// services down and start them again from the current state (after a
// snapshot restore). It never blocks: one pending request is enough.
func (s *Server) reassertLeadership() {
	select {
	case s.reassertCh <- struct{}{}:
	default:
	}
}

// SnapshotSave answers GET /v1/operator/snapshot: the leader's state unless
// the query allows a stale one.
func (o *Operator) SnapshotSave(args *structs.SnapshotSaveRequest, reply *structs.SnapshotSaveResponse) error {
	if done, err := o.srv.forward("Operator.SnapshotSave", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	meta, archive, err := o.srv.SnapshotArchive()
	if err != nil {
		return err
	}
	reply.Archive, reply.SnapshotIndex = archive, meta.Index
	o.srv.setQueryMeta(&reply.QueryMeta)
	reply.Index = meta.Index
	return nil
}

// SnapshotRestore answers PUT /v1/operator/snapshot, on the leader.
func (o *Operator) SnapshotRestore(args *structs.SnapshotRestoreRequest, reply *structs.GenericResponse) error {
	if done, err := o.srv.forward("Operator.SnapshotRestore", args.Region, false, args, reply); done {
		return err
	}
	if len(args.Archive) == 0 {
		return structs.NewErrCoded(400, "missing snapshot archive in the request body")
	}
	idx, err := o.srv.RestoreArchive(args.Archive)
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// TransferLeadershipToPeer hands leadership to the voter named by ID or
// address (PUT /v1/operator/raft/transfer-leadership).
func (o *Operator) TransferLeadershipToPeer(args *structs.RaftPeerRequest, reply *struct{}) error {
	if (args.ID == "") == (args.Address == "") {
		return structs.NewErrCoded(400, "must name the server to transfer leadership to by ID or by address, not both")
	}
	if done, err := o.srv.forward("Operator.TransferLeadershipToPeer", args.Region, false, args, reply); done {
		return err
	}
	f := o.srv.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	var target *raft.Server
	for _, s := range f.Configuration().Servers {
		if (args.ID != "" && string(s.ID) == args.ID) || (args.Address != "" && string(s.Address) == args.Address) {
			target = &s
			break
		}
	}
	what := fmt.Sprintf("id %q", args.ID)
	if args.ID == "" {
		what = fmt.Sprintf("address %q", args.Address)
	}
	switch {
	case target == nil:
		return structs.NewErrCoded(400, "%s was not found in the Raft configuration", what)
	case target.Suffrage != raft.Voter:
		return structs.NewErrCoded(400, "%s is not a voter: only a voter can lead", what)
	case string(target.ID) == o.srv.config.NodeID:
		return structs.NewErrCoded(400, "%s is already the leader", what)
	}
	o.srv.logger.Info("transferring leadership", "to_id", target.ID, "to_address", target.Address)
	if err := o.srv.raft.LeadershipTransferToServer(target.ID, target.Address).Error(); err != nil {
		return fmt.Errorf("transferring leadership to %s: %w", what, err)
	}
	return nil
}
