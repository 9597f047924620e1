package fsm

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// EventSink is implemented by the server's leader-only services. Calls are
// made after each apply commits and MUST NOT block.
type EventSink interface {
	// EvalsUpserted: pending -> broker, blocked -> blocked evals,
	// complete -> untrack.
	EvalsUpserted(evals []*structs.Evaluation)
	// CapacityChanged: a node registered or became ready/eligible, or an
	// allocation on it became client-terminal or was stopped.
	CapacityChanged(computedClass, nodeID string, index uint64)
	// JobUpserted: a job was registered, updated or stopped (the stored
	// version). The periodic dispatcher tracks or forgets periodic parents.
	JobUpserted(job *structs.Job)
	// JobDeleted: a job was purged.
	JobDeleted(namespace, id string)
}

// EventPublisher receives what each entry changed in the store, for the
// event stream (internal/events.Broker). Publish is called once per entry
// that changed something, after its writes and before the entry ends; it
// MUST NOT block and must not take a snapshot of the store. The changes'
// objects are the stored ones: never modified.
type EventPublisher interface {
	Publish(index uint64, msgType structs.MessageType, changes []memdb.Changes)
}

// Config configures an FSM. Logger, Sink and Events may be nil.
type Config struct {
	Logger hclog.Logger
	Sink   EventSink
	Events EventPublisher
	// TimeTableGranularity spaces the index->time pairs the FSM keeps
	// (timetable.go); 0 is DefaultTimeTableGranularity.
	TimeTableGranularity time.Duration
	// Keyring, when set, keeps root key material out of the state store
	// (keyring_hook.go).
	Keyring KeyringHook
}

// FSM applies Raft log entries to a state store.
type FSM struct {
	logger hclog.Logger
	state  atomic.Pointer[state.StateStore]
	sink   atomic.Pointer[sinkHolder]
	events EventPublisher // nil: no event stream

	// nodeStrs maps the IDs of stored nodes that placements were made on
	// or scored to the nodes' own ID and name strings (see nodeStrings),
	// across entries, so that each node is looked up in the store once,
	// not once per entry. A node's entry is dropped when the node is
	// registered again or deregistered, all of them on a restore. Only
	// Apply and Restore use it, which Raft calls one at a time.
	nodeStrs map[string]nodeRef

	// timetable maps Raft indexes to their entries' append times (GC ages).
	timetable *TimeTable

	keyring KeyringHook // nil: material stays where Raft put it

	// restoredOverLive: a snapshot restore replaced a state that held data
	// (an operator's restore, not the one a starting server loads).
	restoredOverLive atomic.Bool
}

// RestoredOverLiveState reports whether a snapshot restore has replaced a
// state that held data: the state's indexes may then be below indexes
// callers were given before the restore.
func (f *FSM) RestoredOverLiveState() bool { return f.restoredOverLive.Load() }

type sinkHolder struct{ s EventSink }

var _ raft.FSM = (*FSM)(nil)

// New returns an FSM over an empty state store.
func New(cfg Config) (*FSM, error) {
	st, err := state.NewStateStore()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	f := &FSM{logger: logger.Named("fsm"), events: cfg.Events, timetable: NewTimeTable(cfg.TimeTableGranularity), keyring: cfg.Keyring}
	f.state.Store(st)
	f.SetSink(cfg.Sink)
	return f, nil
}

// TimeTable is the index->time table the garbage collector ages objects by.
func (f *FSM) TimeTable() *TimeTable { return f.timetable }

// State returns the current store (it is replaced on Restore).
func (f *FSM) State() *state.StateStore { return f.state.Load() }

// SetSink replaces the event sink; nil disables events. Safe concurrently
// with Apply.
func (f *FSM) SetSink(s EventSink) { f.sink.Store(&sinkHolder{s: s}) }

func (f *FSM) eventSink() EventSink {
	if h := f.sink.Load(); h != nil {
		return h.s
	}
	return nil
}

// Apply applies one committed log entry. It returns nil or an error, or for
// a JobRegisterBatchRequestType entry a *JobRegisterBatchResult.
func (f *FSM) Apply(l *raft.Log) any {
	f.timetable.Witness(l.Index, l.AppendedAt)
	if l.Type != raft.LogCommand {
		return nil
	}
	if len(l.Data) == 0 {
		return fmt.Errorf("fsm: empty log entry at index %d", l.Index)
	}
	msgType := structs.MessageType(l.Data[0])
	ignoreUnknown := msgType&structs.IgnoreUnknownTypeFlag != 0
	msgType &^= structs.IgnoreUnknownTypeFlag
	buf := l.Data[1:]
	index := l.Index
	defer measureApply(msgType, time.Now())
	// The entry's writes (several transactions for a batch) become
	// visible to snapshots together.
	st := f.State()
	st.BeginEntry(index)
	defer st.EndEntry()
	if f.events != nil && events.Publishes(msgType) {
		// Other entries are not collected at all: their apply stays as
		// cheap as without a stream.
		st.CollectEntryChanges()
		defer func() {
			if cs := st.TakeEntryChanges(); len(cs) > 0 {
				f.events.Publish(index, msgType, cs)
			}
		}()
	}
	return f.apply(msgType, ignoreUnknown, buf, index)
}

// apply decodes and applies the entry's body.
func (f *FSM) apply(msgType structs.MessageType, ignoreUnknown bool, buf []byte, index uint64) any {
	var err error
	switch {
	case isACLType(msgType):
		err = f.applyACL(msgType, buf, index)
	default:
		return f.applyCore(msgType, ignoreUnknown, buf, index)
	}
	if err != nil {
		return f.failed(msgType, index, err)
	}
	return nil
}

// applyCore applies the entries of the jobs, nodes, evaluations and
// allocations (everything but the ACL system).
func (f *FSM) applyCore(msgType structs.MessageType, ignoreUnknown bool, buf []byte, index uint64) any {
	var err error
	switch msgType {
	case structs.NodeRegisterRequestType:
		err = f.applyNodeRegister(buf, index)
	case structs.NodeDeregisterRequestType:
		err = f.applyNodeDeregister(buf, index)
	case structs.NodeUpdateStatusRequestType:
		err = f.applyNodeStatus(buf, index)
	case structs.NodeBatchUpdateStatusRequestType:
		err = f.applyNodeBatchStatus(buf, index)
	case structs.NodeUpdateEligibilityRequestType:
		err = f.applyNodeEligibility(buf, index)
	case structs.NodeUpdateDrainRequestType:
		err = f.applyNodeDrain(buf, index)
	case structs.BatchNodeUpdateDrainRequestType:
		err = f.applyNodeBatchDrain(buf, index)
	case structs.JobRegisterRequestType:
		err = f.applyJobRegister(buf, index)
	case structs.JobRegisterBatchRequestType:
		res := f.applyJobRegisterBatch(buf, index)
		if err, ok := res.(error); ok {
			return f.failed(msgType, index, err)
		}
		return res
	case structs.JobDeregisterRequestType:
		err = f.applyJobDeregister(buf, index)
	case structs.EvalUpdateRequestType:
		err = f.applyEvalUpdate(buf, index)
	case structs.EvalDeleteRequestType:
		err = f.applyEvalDelete(buf, index)
	case structs.AllocClientUpdateRequestType:
		err = f.applyAllocClientUpdate(buf, index)
	case structs.ApplyPlanResultsRequestType:
		err = f.applyPlanResults(buf, index)
	case structs.ApplyPlanResultsBatchRequestType:
		err = f.applyPlanResultsBatch(buf, index)
	case structs.NamespaceUpsertRequestType:
		err = f.applyNamespaceUpsert(buf, index)
	case structs.NamespaceDeleteRequestType:
		err = f.applyNamespaceDelete(buf, index)
	case structs.NodePoolUpsertRequestType:
		err = f.applyNodePoolUpsert(buf, index)
	case structs.NodePoolDeleteRequestType:
		err = f.applyNodePoolDelete(buf, index)
	case structs.RootKeyUpsertRequestType:
		err = f.applyRootKeyUpsert(buf, index)
	case structs.RootKeyDeleteRequestType:
		err = f.applyRootKeyDelete(buf, index)
	case structs.VarApplyStateRequestType:
		res := f.applyVarApply(buf, index)
		if err, ok := res.(error); ok {
			return f.failed(msgType, index, err)
		}
		return res
	case structs.VarRekeyRequestType:
		err = f.applyVarRekey(buf, index)
	case structs.ClusterMetadataRequestType:
		err = f.applyClusterMetadata(buf, index)
	case structs.SchedulerConfigRequestType:
		res := f.applySchedulerConfig(buf, index)
		if err, ok := res.(error); ok {
			return f.failed(msgType, index, err)
		}
		return res
	case structs.AutopilotConfigRequestType:
		res := f.applyAutopilotConfig(buf, index)
		if err, ok := res.(error); ok {
			return f.failed(msgType, index, err)
		}
		return res
	case structs.JobStabilityRequestType:
		err = f.applyJobStability(buf, index)
	case structs.ScalingEventRegisterRequestType:
		err = f.applyScalingEvent(buf, index)
	case structs.JobVersionTagRequestType:
		err = f.applyJobVersionTag(buf, index)
	case structs.DeploymentStatusUpdateRequestType:
		err = f.applyDeploymentStatusUpdate(buf, index)
	case structs.DeploymentPromoteRequestType:
		err = f.applyDeploymentPromotion(buf, index)
	case structs.DeploymentAllocHealthRequestType:
		err = f.applyDeploymentAllocHealth(buf, index)
	case structs.AllocUpdateDesiredTransitionRequestType:
		err = f.applyAllocDesiredTransition(buf, index)
	case structs.DeploymentDeleteRequestType:
		err = f.applyDeploymentDelete(buf, index)
	case structs.JobBatchDeregisterRequestType:
		err = f.applyJobBatchDeregister(buf, index)
	case structs.NodeBatchDeregisterRequestType:
		err = f.applyNodeBatchDeregister(buf, index)
	case structs.ReconcileJobSummariesRequestType:
		err = f.applyReconcileSummaries(buf, index)
	case structs.JobRestartRequestType:
		err = f.applyJobRestart(buf, index)
	case structs.ServiceRegistrationUpsertRequestType:
		err = f.applyServiceRegistrationUpsert(buf, index)
	case structs.ServiceRegistrationDeleteByIDRequestType:
		err = f.applyServiceRegistrationDeleteByID(buf, index)
	case structs.ServiceRegistrationDeleteByAllocRequestType:
		err = f.applyServiceRegistrationDeleteByAlloc(buf, index)
	default:
		if ignoreUnknown {
			f.logger.Warn("ignoring unknown message type", "type", uint8(msgType), "index", index)
			return nil
		}
		err = fmt.Errorf("fsm: unknown message type %d at index %d", uint8(msgType), index)
	}
	if err != nil {
		return f.failed(msgType, index, err)
	}
	return nil
}

// failed logs an entry that changed nothing and returns its error for the
// proposer. An entry that cannot be decoded is skipped the same way on every
// server (decoding depends on the bytes alone), so state stays identical;
// servers refuse to propose such entries (see structs.CheckEntryDepth), so
// one here was written by an older version or is corrupt.
func (f *FSM) failed(msgType structs.MessageType, index uint64, err error) error {
	var ue *UndecodableError
	if errors.As(err, &ue) {
		metrics.IncrCounter(undecodableKey, 1)
		f.logger.Error("skipped a Raft entry that cannot be decoded; it changed nothing",
			"type", uint8(msgType), "index", index, "error", err)
		return err
	}
	f.logger.Error("apply failed", "type", uint8(msgType), "index", index, "error", err)
	return err
}

// undecodableKey counts skipped entries: nomad.nomad.fsm.undecodable_entries.
var undecodableKey = []string{"nomad", "fsm", "undecodable_entries"}

// UndecodableError is the error of an entry whose body does not decode.
type UndecodableError struct {
	What string // the entry's kind, "job register"
	Err  error
}

func (e *UndecodableError) Error() string {
	return fmt.Sprintf("fsm: decoding %s: %v", e.What, e.Err)
}

func (e *UndecodableError) Unwrap() error { return e.Err }

func decode(buf []byte, out any, what string) error {
	if err := structs.Decode(buf, out); err != nil {
		return &UndecodableError{What: what, Err: err}
	}
	return nil
}

// checkEvals refuses, before an entry writes anything, the evaluations
// the store would refuse after the entry's other writes committed: a
// failed entry must leave the state as it was.
func checkEvals(evals []*structs.Evaluation) error {
	for _, e := range evals {
		if e == nil || e.ID == "" {
			return fmt.Errorf("fsm: entry has an evaluation without an ID")
		}
	}
	return nil
}

// upsertEvals writes evals and reports the stored versions to the sink.
func (f *FSM) upsertEvals(index uint64, evals []*structs.Evaluation) error {
	if len(evals) == 0 {
		return nil
	}
	st := f.State()
	if err := st.UpsertEvals(index, evals); err != nil {
		return err
	}
	f.notifyEvals(evals)
	return nil
}

// notifyEvals reports the stored versions of evals to the sink.
func (f *FSM) notifyEvals(evals []*structs.Evaluation) {
	sink := f.eventSink()
	if sink == nil || len(evals) == 0 {
		return
	}
	st := f.State()
	out := make([]*structs.Evaluation, 0, len(evals))
	for _, e := range evals {
		if e == nil {
			continue
		}
		stored, err := st.EvalByID(nil, e.ID)
		if err != nil || stored == nil {
			continue
		}
		out = append(out, stored)
	}
	if len(out) > 0 {
		sink.EvalsUpserted(out)
	}
}

func (f *FSM) capacityChanged(node *structs.Node, index uint64) {
	if node == nil {
		return
	}
	if sink := f.eventSink(); sink != nil {
		sink.CapacityChanged(node.ComputedClass, node.ID, index)
	}
}
