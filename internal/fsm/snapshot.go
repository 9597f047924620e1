package fsm

import (
	"bufio"
	"fmt"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// SnapshotType tags each record of a snapshot stream. Numbers are stable:
// append new types, never renumber.
type SnapshotType uint8

const (
	IndexSnapshot           SnapshotType = 0
	NodeSnapshot            SnapshotType = 1
	JobSnapshot             SnapshotType = 2
	JobVersionSnapshot      SnapshotType = 3
	JobSummarySnapshot      SnapshotType = 4
	JobSubmissionSnapshot   SnapshotType = 5
	EvalSnapshot            SnapshotType = 6
	AllocSnapshot           SnapshotType = 7
	DeploymentSnapshot      SnapshotType = 8
	NamespaceSnapshot       SnapshotType = 9
	RootKeySnapshot         SnapshotType = 10
	ClusterMetadataSnapshot SnapshotType = 11
	ScalingEventSnapshot    SnapshotType = 12

	// ScalingPolicySnapshot is 42, the number the scaling-policy work was
	// given, so record types added in parallel from 13 up do not collide.
	ScalingPolicySnapshot SnapshotType = 42

	// PeriodicLaunchSnapshot starts at 100 so record types added in
	// parallel branches below it never collide with it.
	PeriodicLaunchSnapshot SnapshotType = 100

	// SchedulerConfigSnapshot takes its Raft message type's number, clear
	// of the types other branches append.
	SchedulerConfigSnapshot SnapshotType = 30
	// AutopilotConfigSnapshot takes its Raft message type's number.
	AutopilotConfigSnapshot SnapshotType = 34

	// TimeTableSnapshot is the index->time table (timetable.go), one
	// record holding every pair; clear of the numbers other branches take.
	TimeTableSnapshot SnapshotType = 116
	// JobRestartSnapshot takes its Raft message type's number (111).
	JobRestartSnapshot SnapshotType = 111
	// NodePoolSnapshot takes its Raft message type's number (66).
	NodePoolSnapshot SnapshotType = 66
	// VariableSnapshot takes its Raft message type's number (70).
	VariableSnapshot SnapshotType = 70
	// ServiceRegistrationSnapshot takes its Raft upsert type's number (80).
	ServiceRegistrationSnapshot SnapshotType = 80
)

// snapshotHandle encodes snapshots: the servers' handle
// (structs.MsgpackHandle) with map keys sorted. Go randomises map
// iteration, so without it two servers holding equal state would persist
// different bytes (TestDeterminismAcrossProcesses). Decoding is the same.
var snapshotHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = structs.MsgpackHandle.RawToString
	h.MapType = structs.MsgpackHandle.MapType
	h.Raw = structs.MsgpackHandle.Raw
	h.Canonical = true
	return h
}()

// snapshotFormat is written in the header; Restore refuses newer formats.
const snapshotFormat = 1

// SnapshotHeader opens every snapshot stream.
type SnapshotHeader struct {
	Format int
}

type fsmSnapshot struct {
	snap  *state.StateSnapshot
	times []TimeTableEntry
}

// Snapshot captures the current state in O(1); Persist streams it.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	snap, err := f.State().Snapshot()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{snap: snap, times: f.timetable.Entries()}, nil
}

// Persist writes the header then every table as type-tagged records.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.persist(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) persist(sink raft.SnapshotSink) error {
	w := bufio.NewWriter(sink)
	enc := codec.NewEncoder(w, snapshotHandle)
	if err := enc.Encode(&SnapshotHeader{Format: snapshotFormat}); err != nil {
		return fmt.Errorf("fsm: snapshot header: %w", err)
	}
	write := func(t SnapshotType, obj any) error {
		if err := w.WriteByte(byte(t)); err != nil {
			return err
		}
		if err := enc.Encode(obj); err != nil {
			return fmt.Errorf("fsm: snapshot record %d: %w", t, err)
		}
		return nil
	}
	writeIter := func(t SnapshotType, iter memdb.ResultIterator, err error) error {
		if err != nil {
			return err
		}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if err := write(t, raw); err != nil {
				return err
			}
		}
		return nil
	}
	st := s.snap
	steps := []func() error{
		func() error { it, err := st.Indexes(); return writeIter(IndexSnapshot, it, err) },
		func() error { it, err := st.Nodes(nil); return writeIter(NodeSnapshot, it, err) },
		func() error { it, err := st.Jobs(nil); return writeIter(JobSnapshot, it, err) },
		func() error { it, err := st.JobVersions(nil); return writeIter(JobVersionSnapshot, it, err) },
		func() error { it, err := st.JobSummaries(nil); return writeIter(JobSummarySnapshot, it, err) },
		func() error { it, err := st.JobSubmissions(nil); return writeIter(JobSubmissionSnapshot, it, err) },
		func() error { it, err := st.Evals(nil); return writeIter(EvalSnapshot, it, err) },
		func() error { it, err := st.Allocs(nil); return writeIter(AllocSnapshot, it, err) },
		func() error { it, err := st.Deployments(nil); return writeIter(DeploymentSnapshot, it, err) },
		func() error { it, err := st.Namespaces(nil); return writeIter(NamespaceSnapshot, it, err) },
		func() error { it, err := st.NodePools(nil); return writeIter(NodePoolSnapshot, it, err) },
		func() error { it, err := st.ScalingEvents(nil); return writeIter(ScalingEventSnapshot, it, err) },
		func() error { it, err := st.ScalingPolicies(nil); return writeIter(ScalingPolicySnapshot, it, err) },
		func() error { it, err := st.PeriodicLaunches(nil); return writeIter(PeriodicLaunchSnapshot, it, err) },
		func() error { it, err := st.JobRestarts(nil); return writeIter(JobRestartSnapshot, it, err) },
		func() error { it, err := st.Variables(nil); return writeIter(VariableSnapshot, it, err) },
		func() error {
			it, err := st.ServiceRegistrations(nil)
			return writeIter(ServiceRegistrationSnapshot, it, err)
		},
		func() error {
			keys, err := st.RootKeys(nil)
			if err != nil {
				return err
			}
			for _, k := range keys {
				if err := write(RootKeySnapshot, k); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			meta, err := st.ClusterMetadata(nil)
			if err != nil || meta == nil {
				return err
			}
			return write(ClusterMetadataSnapshot, meta)
		},
		func() error {
			c, err := st.SchedulerConfig(nil)
			if err != nil || c == nil {
				return err
			}
			return write(SchedulerConfigSnapshot, c)
		},
		func() error {
			c, err := st.AutopilotConfig(nil)
			if err != nil || c == nil {
				return err
			}
			return write(AutopilotConfigSnapshot, c)
		},
		func() error {
			if len(s.times) == 0 {
				return nil
			}
			return write(TimeTableSnapshot, s.times)
		},
	}
	for _, at := range aclSnapshotTypes {
		steps = append(steps, func() error {
			rows, err := st.ACLRows(at.table)
			if err != nil {
				return err
			}
			for _, row := range rows {
				if err := write(at.t, row); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return w.Flush()
}

// Release is a no-op: memdb snapshots need no cleanup.
func (s *fsmSnapshot) Release() {}
