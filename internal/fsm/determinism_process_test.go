package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/structs"
)

// TestDeterminism replays a log twice in one process, so process-local
// state (interned strings, memo caches, map hash seeds fixed at start) is
// the same for both replays and cannot show. Here two fresh processes (this
// test binary, re-executed) apply one recorded log and persist their
// snapshots, which must be byte-identical: a Raft snapshot from one server
// installed on another must hold what that server's own log produced.

const (
	envReplayLog = "DROVER_FSM_REPLAY_LOG"
	envReplayOut = "DROVER_FSM_REPLAY_OUT"
)

// realisticLog is a cluster's history: nodes with attributes and meta,
// jobs with meta, a periodic parent and its launch, plan applies with
// resources, client updates with task states, a registration batch, a
// heartbeat-expiry batch, stops and purges.
func realisticLog(t *testing.T) []*raft.Log {
	var logs []*raft.Log
	index := uint64(0)
	add := func(mt structs.MessageType, msg any) {
		index++
		logs = append(logs, entry(t, index, mt, msg))
	}
	add(structs.ClusterMetadataRequestType, &structs.ClusterMetadata{ClusterID: "c1", CreateTime: 1})
	add(structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "prod", Meta: map[string]string{"team": "a", "tier": "1", "zone": "z"}}}})
	var nodes []string
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, id)
		n := testNode(id)
		n.Attributes = map[string]string{"kernel.name": "linux", "cpu.arch": "amd64", "driver.raw_exec": "1",
			"unique.hostname": id, "os.name": "debian", "cpu.numcores": "2", "memory.totalbytes": "1000000"}
		n.Meta = map[string]string{"rack": fmt.Sprint("r", i%2), "zone": "z1", "owner": "ops", "env": "test"}
		n.Drivers = map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}, "exec": {Detected: true}}
		n.NodeResources = &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000}, Memory: structs.NodeMemoryResources{MemoryMB: 4096}}
		add(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n})
		add(structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: id, Status: structs.NodeStatusReady, UpdatedAt: int64(10 + i),
			NodeEvent: &structs.NodeEvent{Message: "ready", Subsystem: "Cluster", Details: map[string]string{"a": "1", "b": "2", "c": "3"}, Timestamp: time.Unix(int64(10+i), 0).UTC()}})
	}
	jobs := []string{"web", "api", "batch"}
	for i, id := range jobs {
		j := testJob(id)
		j.Meta = map[string]string{"owner": "team", "version": fmt.Sprint(i), "x": "y", "k": "v"}
		if id == "batch" {
			j.Type = structs.JobTypeBatch
		}
		j.TaskGroups[0].Count = 2
		j.TaskGroups[0].Tasks[0].Env = map[string]string{"A": "1", "B": "2", "C": "3", "D": "4"}
		add(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: j, Eval: testEval("eval-"+id, id, structs.EvalStatusPending),
			Submission: &structs.JobSubmission{Source: "job \"" + id + "\" {}", Format: "hcl2", VariableFlags: map[string]string{"v1": "a", "v2": "b", "v3": "c"}}})
		planJob := j.Copy()
		planJob.CreateIndex, planJob.ModifyIndex, planJob.JobModifyIndex = index, index, index
		var allocs []*structs.Allocation
		for k := 0; k < 2; k++ {
			allocs = append(allocs, &structs.Allocation{ID: fmt.Sprintf("alloc-%s-%d", id, k), Namespace: "default", EvalID: "eval-" + id,
				NodeID: nodes[(i*2+k)%len(nodes)], JobID: id, TaskGroup: "web", Name: fmt.Sprintf("%s.web[%d]", id, k),
				DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending, CreateTime: int64(100 + k),
				AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
					"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}}}},
				Metrics: &structs.AllocMetric{NodesEvaluated: 6, ScoreMetaData: []*structs.NodeScoreMeta{
					{NodeID: nodes[0], Scores: map[string]float64{"binpack": 0.5, "job-anti-affinity": 0, "node-affinity": 0.1}, NormScore: 0.3}}},
			})
		}
		add(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: planJob, Alloc: allocs, EvalID: "eval-" + id, UpdatedAt: 200})
		done := testEval("eval-"+id, id, structs.EvalStatusComplete)
		done.QueuedAllocations = map[string]int{"web": 0, "other": 1, "third": 2}
		add(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{done}})
		for k := 0; k < 2; k++ {
			add(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{
				ID: fmt.Sprintf("alloc-%s-%d", id, k), ClientStatus: structs.AllocClientStatusRunning,
				TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: time.Unix(300, 0).UTC()},
					"sidecar": {State: structs.TaskStatePending}}}}})
		}
	}
	// A periodic parent and a launch.
	parent := testJob("cron")
	parent.Type = structs.JobTypeBatch
	spec := "*/5 * * * *"
	parent.Periodic = &structs.PeriodicConfig{Spec: &spec}
	parent.SubmitTime = time.Unix(1000, 0).UnixNano()
	add(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: parent})
	child := structs.DerivePeriodicChild(parent, time.Unix(2000, 0))
	add(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: child, Eval: testEval("eval-cron", child.ID, structs.EvalStatusPending)})
	// Two registrations of one job in one entry.
	v2, v3 := testJob("web"), testJob("web")
	v2.TaskGroups[0].Count, v3.TaskGroups[0].Count = 3, 4
	add(structs.JobRegisterBatchRequestType, &structs.JobRegisterBatchRequest{Jobs: []*structs.JobRegisterRequest{
		{Job: v2, Eval: testEval("eval-web-2", "web", structs.EvalStatusPending)},
		{Job: v3, Eval: testEval("eval-web-3", "web", structs.EvalStatusPending)},
	}})
	// Heartbeats missed: two nodes down in one entry, with their evals.
	ev := &structs.NodeEvent{Message: "Node heartbeat missed", Subsystem: "Cluster", Timestamp: time.Unix(400, 0).UTC()}
	add(structs.NodeBatchUpdateStatusRequestType, &structs.NodeBatchUpdateStatusRequest{
		Updates: []*structs.NodeUpdateStatusRequest{
			{NodeID: nodes[0], Status: structs.NodeStatusDown, NodeEvent: ev, UpdatedAt: 400},
			{NodeID: nodes[1], Status: structs.NodeStatusDown, NodeEvent: ev, UpdatedAt: 400},
		},
		Evals: []*structs.Evaluation{testEval("eval-lost-1", "web", structs.EvalStatusPending), testEval("eval-lost-2", "api", structs.EvalStatusPending)},
	})
	add(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{ID: "alloc-api-0", ClientStatus: structs.AllocClientStatusFailed}},
		Evals: []*structs.Evaluation{testEval("eval-api-resched", "api", structs.EvalStatusPending)}})
	add(structs.ApplyPlanResultsBatchRequestType, &structs.ApplyPlanResultsBatchRequest{Plans: []*structs.ApplyPlanResultsRequest{
		{AllocsStopped: []*structs.Allocation{{ID: "alloc-web-0", DesiredStatus: structs.AllocDesiredStatusStop}}},
	}})
	add(structs.ScalingEventRegisterRequestType, &structs.ScalingEventRequest{Namespace: "default", JobID: "api", TaskGroup: "web",
		ScalingEvent: &structs.ScalingEvent{Message: "by hand", Time: 500, PreviousCount: 2, Meta: map[string]any{"a": 1, "b": "two", "c": true}}})
	add(structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "api", Eval: testEval("eval-api-stop", "api", structs.EvalStatusPending),
		WriteRequest: structs.WriteRequest{Namespace: "default"}})
	add(structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "batch", Purge: true, WriteRequest: structs.WriteRequest{Namespace: "default"}})
	add(structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{nodes[5]}})
	return logs
}

func writeLog(w io.Writer, logs []*raft.Log) error {
	for _, l := range logs {
		var hdr [16]byte
		binary.BigEndian.PutUint64(hdr[:8], l.Index)
		binary.BigEndian.PutUint64(hdr[8:], uint64(len(l.Data)))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(l.Data); err != nil {
			return err
		}
	}
	return nil
}

func readLog(r io.Reader) ([]*raft.Log, error) {
	var out []*raft.Log
	for {
		var hdr [16]byte
		if _, err := io.ReadFull(r, hdr[:]); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		data := make([]byte, binary.BigEndian.Uint64(hdr[8:]))
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, err
		}
		out = append(out, &raft.Log{Index: binary.BigEndian.Uint64(hdr[:8]), Type: raft.LogCommand, Data: data})
	}
}

// TestDeterminismReplayChild is the child's half of
// TestDeterminismAcrossProcesses: it does nothing unless started by it. It
// applies the log, persists a snapshot, and checks that restoring that
// snapshot into a fresh FSM persists the same bytes again.
func TestDeterminismReplayChild(t *testing.T) {
	in, out := os.Getenv(envReplayLog), os.Getenv(envReplayOut)
	if in == "" || out == "" {
		t.Skip("run by TestDeterminismAcrossProcesses")
	}
	raw, err := os.ReadFile(in)
	must(t, err)
	logs, err := readLog(bytes.NewReader(raw))
	must(t, err)
	f := newFSM(t, &recordingSink{})
	for _, l := range logs {
		if resp := f.Apply(l); resp != nil {
			if res, ok := resp.(*JobRegisterBatchResult); !ok || slices.ContainsFunc(res.Errors, func(e error) bool { return e != nil }) {
				t.Fatalf("apply index %d: %v", l.Index, resp)
			}
		}
	}
	persist := func(f *FSM) []byte {
		snap, err := f.Snapshot()
		must(t, err)
		buf := &bufSink{}
		must(t, snap.Persist(buf))
		return buf.Bytes()
	}
	b := persist(f)
	restored := newFSM(t, nil)
	must(t, restored.Restore(nopCloser{bytes.NewReader(b)}))
	if again := persist(restored); !bytes.Equal(b, again) {
		t.Fatalf("a restored snapshot persists %d bytes, the original %d: restore is not faithful", len(again), len(b))
	}
	must(t, os.WriteFile(out, b, 0o600))
}

func TestDeterminismAcrossProcesses(t *testing.T) {
	if os.Getenv(envReplayLog) != "" {
		t.Skip("in a child")
	}
	for name, logs := range map[string][]*raft.Log{"realistic": realisticLog(t), "every message type": scenario(t)} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var log bytes.Buffer
			must(t, writeLog(&log, logs))
			logPath := filepath.Join(dir, "raft.log")
			must(t, os.WriteFile(logPath, log.Bytes(), 0o600))
			var snaps [][]byte
			for i := 0; i < 2; i++ {
				out := filepath.Join(dir, fmt.Sprintf("snap-%d", i))
				cmd := exec.Command(os.Args[0], "-test.run=^TestDeterminismReplayChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), envReplayLog+"="+logPath, envReplayOut+"="+out)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("replay process %d: %v\n%s", i, err, b)
				}
				b, err := os.ReadFile(out)
				must(t, err)
				snaps = append(snaps, b)
			}
			if len(snaps[0]) == 0 {
				t.Fatal("empty snapshot")
			}
			if !bytes.Equal(snaps[0], snaps[1]) {
				at := 0
				for at < len(snaps[0]) && at < len(snaps[1]) && snaps[0][at] == snaps[1][at] {
					at++
				}
				t.Fatalf("two processes applying one log persisted different snapshots (%d and %d bytes, first difference at byte %d)",
					len(snaps[0]), len(snaps[1]), at)
			}
		})
	}
}
