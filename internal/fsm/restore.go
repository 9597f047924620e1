package fsm

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/msgpackframe"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Restore replaces the state with the snapshot read from rc: it loads a
// brand-new store, swaps it in atomically, then abandons the old store so
// blocking queries on it wake up.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	newState, err := state.NewStateStore()
	if err != nil {
		return err
	}
	restore, err := newState.Restore()
	if err != nil {
		return err
	}
	var times []TimeTableEntry
	if err := readSnapshot(rc, restore, &times, nil); err != nil {
		restore.Abort()
		return err
	}
	if err := restore.Commit(); err != nil {
		return err
	}
	if err := f.restoreRootKeys(newState); err != nil {
		return err
	}
	f.timetable.restore(times)
	old := f.state.Swap(newState)
	f.nodeStrs = nil
	if old != nil {
		if idx, err := old.LatestIndex(); err == nil && idx > 0 {
			f.restoredOverLive.Store(true)
		}
		old.Abandon()
	}
	return nil
}

// recordDecoder decodes a snapshot's values one at a time: each is read
// whole into memory first (msgpackframe), so a length the stream claims
// costs memory only as its bytes arrive.
type recordDecoder struct {
	r   *bufio.Reader
	buf []byte
	dec *codec.Decoder
}

func (d *recordDecoder) Decode(v any) error {
	var err error
	if d.buf, err = msgpackframe.Read(d.r, d.buf[:0]); err != nil {
		return err
	}
	d.dec.ResetBytes(d.buf)
	return d.dec.Decode(v)
}

// readSnapshot loads a snapshot stream into restore; count, when not nil,
// is told the type of every record read.
func readSnapshot(rc io.Reader, restore *state.StateRestore, times *[]TimeTableEntry, count func(SnapshotType)) error {
	r := bufio.NewReader(rc)
	dec := &recordDecoder{r: r, dec: codec.NewDecoderBytes(nil, structs.MsgpackHandle)}
	var header SnapshotHeader
	if err := dec.Decode(&header); err != nil {
		return fmt.Errorf("fsm: snapshot header: %w", err)
	}
	if header.Format > snapshotFormat {
		return fmt.Errorf("fsm: snapshot format %d is newer than this server's %d", header.Format, snapshotFormat)
	}
	var compact restoreCompactor
	for {
		b, err := r.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("fsm: snapshot record type: %w", err)
		}
		if count != nil {
			count(SnapshotType(b))
		}
		if SnapshotType(b) == TimeTableSnapshot {
			if err := dec.Decode(times); err != nil {
				return fmt.Errorf("fsm: snapshot record %d: %w", b, err)
			}
			continue
		}
		if err := restoreRecord(dec, SnapshotType(b), restore, &compact); err != nil {
			return err
		}
	}
}

func restoreRecord(dec *recordDecoder, t SnapshotType, r *state.StateRestore, compact *restoreCompactor) error {
	wrap := func(err error) error {
		if err != nil {
			return fmt.Errorf("fsm: snapshot record %d: %w", t, err)
		}
		return nil
	}
	switch t {
	case IndexSnapshot:
		var e state.IndexEntry
		if err := dec.Decode(&e); err != nil {
			return wrap(err)
		}
		return wrap(r.IndexRestore(e.Key, e.Value))
	case NodeSnapshot:
		v := new(structs.Node)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		compactNode(v)
		compact.node(v)
		return wrap(r.NodeRestore(v))
	case JobSnapshot:
		v := new(structs.Job)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.JobRestore(v))
	case JobVersionSnapshot:
		v := new(structs.Job)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.JobVersionRestore(v))
	case JobSummarySnapshot:
		v := new(structs.JobSummary)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.JobSummaryRestore(v))
	case JobSubmissionSnapshot:
		v := new(structs.JobSubmission)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.JobSubmissionRestore(v))
	case EvalSnapshot:
		v := new(structs.Evaluation)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.EvalRestore(v))
	case AllocSnapshot:
		v := new(structs.Allocation)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		compact.alloc(v)
		return wrap(r.AllocRestore(v))
	case DeploymentSnapshot:
		v := new(structs.Deployment)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.DeploymentRestore(v))
	case NamespaceSnapshot:
		v := new(structs.Namespace)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.NamespaceRestore(v))
	case PeriodicLaunchSnapshot:
		v := new(structs.PeriodicLaunch)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.PeriodicLaunchRestore(v))
	case JobRestartSnapshot:
		v := new(structs.JobRestart)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.JobRestartRestore(v))
	case ServiceRegistrationSnapshot:
		v := new(structs.ServiceRegistration)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.ServiceRegistrationRestore(v))
	case NodePoolSnapshot:
		v := new(structs.NodePool)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.NodePoolRestore(v))
	case VariableSnapshot:
		v := new(structs.VariableEncrypted)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.VariableRestore(v))
	case RootKeySnapshot:
		v := new(structs.RootKey)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.RootKeyRestore(v))
	case ScalingPolicySnapshot:
		v := new(structs.ScalingPolicy)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.ScalingPolicyRestore(v))
	case ScalingEventSnapshot:
		v := new(structs.JobScalingEvents)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.ScalingEventsRestore(v))
	case ClusterMetadataSnapshot:
		v := new(structs.ClusterMetadata)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.ClusterMetadataRestore(v))
	case SchedulerConfigSnapshot:
		v := new(structs.SchedulerConfiguration)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.SchedulerConfigRestore(v))
	case AutopilotConfigSnapshot:
		v := new(structs.AutopilotConfig)
		if err := dec.Decode(v); err != nil {
			return wrap(err)
		}
		return wrap(r.AutopilotConfigRestore(v))
	}
	for _, at := range aclSnapshotTypes {
		if at.t == t {
			v := at.new()
			if err := dec.Decode(v); err != nil {
				return wrap(err)
			}
			return wrap(r.ACLRestore(at.table, v))
		}
	}
	return fmt.Errorf("fsm: unknown snapshot record type %d", t)
}
