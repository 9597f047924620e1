package fsm

import (
	"bytes"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

type capacityCall struct {
	class, node string
	index       uint64
}

type recordingSink struct {
	mu       sync.Mutex
	evals    []*structs.Evaluation
	capacity []capacityCall
	jobs     []string
	deleted  []string
}

func (r *recordingSink) EvalsUpserted(evals []*structs.Evaluation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evals = append(r.evals, evals...)
}

func (r *recordingSink) CapacityChanged(class, nodeID string, index uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.capacity = append(r.capacity, capacityCall{class, nodeID, index})
}

func (r *recordingSink) JobUpserted(job *structs.Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs = append(r.jobs, job.NamespacedID().String())
}

func (r *recordingSink) JobDeleted(namespace, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted = append(r.deleted, namespace+"/"+id)
}

func (r *recordingSink) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evals, r.capacity, r.jobs, r.deleted = nil, nil, nil, nil
}

func newFSM(t *testing.T, sink EventSink) *FSM {
	t.Helper()
	f, err := New(Config{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func entry(t *testing.T, index uint64, mt structs.MessageType, msg any) *raft.Log {
	t.Helper()
	buf, err := structs.Encode(mt, msg)
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: buf}
}

func apply(t *testing.T, f *FSM, l *raft.Log) {
	t.Helper()
	if resp := f.Apply(l); resp != nil {
		t.Fatalf("apply index %d: %v", l.Index, resp)
	}
}

func testJob(id string) *structs.Job {
	return &structs.Job{
		Namespace: structs.DefaultNamespace, ID: id, Name: id, Type: structs.JobTypeService, Priority: 50,
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "sleep", "args": []any{"10"}}}}}},
		SubmitTime: 1000,
	}
}

func testNode(id string) *structs.Node {
	return &structs.Node{ID: id, SecretID: "s-" + id, Name: id, Datacenter: "dc1",
		Attributes: map[string]string{"kernel.name": "linux"}}
}

func testEval(id, jobID, status string) *structs.Evaluation {
	return &structs.Evaluation{ID: id, Namespace: "default", JobID: jobID, Type: "service", Status: status, Priority: 50,
		TriggeredBy: structs.EvalTriggerJobRegister, CreateTime: 5, ModifyTime: 5}
}

// scenario is a log exercising every message type.
func scenario(t *testing.T) []*raft.Log {
	job := testJob("web")
	planJob := testJob("web") // as the scheduler saw it in state
	planJob.CreateIndex, planJob.ModifyIndex, planJob.JobModifyIndex = 9, 9, 9
	alloc := &structs.Allocation{ID: "a1", Namespace: "default", EvalID: "e1", NodeID: "n1", JobID: "web", DeploymentID: "d1",
		TaskGroup: "web", Name: "web.web[0]", DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus: structs.AllocClientStatusPending, CreateTime: 7}
	return []*raft.Log{
		entry(t, 1, structs.ClusterMetadataRequestType, &structs.ClusterMetadata{ClusterID: "c1", CreateTime: 1}),
		entry(t, 2, structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{Key: &structs.RootKey{KeyID: "k1", PrivateKey: []byte{1, 2}}}),
		entry(t, 3, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "prod"}}}),
		entry(t, 4, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n1")}),
		entry(t, 5, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusReady, UpdatedAt: 9,
			NodeEvent: &structs.NodeEvent{Message: "ready", Timestamp: time.Unix(9, 0).UTC()}}),
		entry(t, 6, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n2")}),
		entry(t, 7, structs.NodeUpdateEligibilityRequestType, &structs.NodeUpdateEligibilityRequest{NodeID: "n2", Eligibility: structs.NodeSchedulingIneligible}),
		entry(t, 8, structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{"n2"}}),
		entry(t, 9, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: testEval("e1", "web", structs.EvalStatusPending),
			Submission: &structs.JobSubmission{Source: "job \"web\" {}", Format: "hcl2"}}),
		entry(t, 10, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: planJob, Alloc: []*structs.Allocation{alloc}, EvalID: "e1",
			Deployment: &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobCreateIndex: 9, Status: structs.DeploymentStatusRunning,
				TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 1}}}}),
		entry(t, 11, structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{
			func() *structs.Evaluation {
				e := testEval("e1", "web", structs.EvalStatusComplete)
				e.QueuedAllocations = map[string]int{"web": 0}
				return e
			}()}}),
		entry(t, 12, structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning,
			TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: time.Unix(10, 0).UTC()}}}}}),
		entry(t, 13, structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{
			Alloc: []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusFailed}},
			Evals: []*structs.Evaluation{testEval("e2", "web", structs.EvalStatusPending)}}),
		entry(t, 14, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "web", Eval: testEval("e3", "web", structs.EvalStatusPending),
			WriteRequest: structs.WriteRequest{Namespace: "default"}}),
		entry(t, 15, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("batch")}),
		entry(t, 16, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "batch", Purge: true}),
		entry(t, 17, structs.EvalDeleteRequestType, &structs.EvalDeleteRequest{Evals: []string{"e2"}}),
		entry(t, 18, structs.JobStabilityRequestType, &structs.JobStabilityRequest{JobID: "web", JobVersion: 0, Stable: true}),
		entry(t, 19, structs.ScalingEventRegisterRequestType, &structs.ScalingEventRequest{Namespace: "default", JobID: "web", TaskGroup: "web",
			ScalingEvent: &structs.ScalingEvent{Message: "by hand", Time: 77, PreviousCount: 1}}),
		entry(t, 20, structs.JobVersionTagRequestType, &structs.JobTagRequest{JobID: "web", Name: "golden", Version: 0,
			Tag: &structs.JobVersionTag{Name: "golden", TaggedTime: 78}}),
		entry(t, 21, structs.ApplyPlanResultsBatchRequestType, &structs.ApplyPlanResultsBatchRequest{Plans: []*structs.ApplyPlanResultsRequest{
			{Job: planJob, Alloc: []*structs.Allocation{{ID: "a2", Namespace: "default", EvalID: "e3", NodeID: "n1", JobID: "web",
				TaskGroup: "web", Name: "web.web[0]", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending}}},
			{AllocsStopped: []*structs.Allocation{{ID: "a2", DesiredStatus: structs.AllocDesiredStatusStop}}},
		}}),
		entry(t, 22, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: scaledJob()}),
		entry(t, 23, structs.NodePoolUpsertRequestType, &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{
			{Name: "gpu", Description: "GPUs", Meta: map[string]string{"v": "nv"}, NodeIdentityTTL: time.Hour,
				SchedulerConfiguration: &structs.NodePoolSchedulerConfiguration{SchedulerAlgorithm: "spread", MemoryOversubscriptionEnabled: new(true)}},
			{Name: "tmp"}}}),
		entry(t, 24, structs.NodePoolDeleteRequestType, &structs.NodePoolDeleteRequest{Names: []string{"tmp"}}),
		entry(t, 25, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "gone"},
			{Name: "ml", Capabilities: &structs.NamespaceCapabilities{DisabledTaskDrivers: []string{"raw_exec"}},
				NodePoolConfiguration: &structs.NamespaceNodePoolConfiguration{Default: "gpu"}}}}),
		entry(t, 26, structs.NamespaceDeleteRequestType, &structs.NamespaceDeleteRequest{Namespaces: []string{"gone"}}),
		entry(t, 27, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: func() *structs.Node {
			n := testNode("n3")
			n.NodePool = "edge"
			return n
		}()}),
		// The ACL system: every table gets a row, and deletes run.
		entry(t, 28, structs.ACLTokenBootstrapRequestType, &structs.ACLTokenBootstrapRequest{Token: &structs.ACLToken{
			AccessorID: "root-acc", SecretID: "root-sec", Type: structs.ACLManagementToken, CreateTime: time.Unix(1, 0).UTC()}}),
		entry(t, 29, structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
			{Name: "ro", Rules: `namespace "default" { policy = "read" }`}, {Name: "tmp", Rules: `node { policy = "read" }`}}}),
		entry(t, 30, structs.ACLPolicyDeleteRequestType, &structs.ACLNamesRequest{Names: []string{"tmp"}}),
		entry(t, 31, structs.ACLRoleUpsertRequestType, &structs.ACLRoleUpsertRequest{Roles: []*structs.ACLRole{
			{ID: "role-1", Name: "readers", Policies: []*structs.ACLRolePolicyLink{{Name: "ro"}}}, {ID: "role-2", Name: "gone"}}}),
		entry(t, 32, structs.ACLRoleDeleteRequestType, &structs.ACLNamesRequest{Names: []string{"role-2"}}),
		entry(t, 33, structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
			{AccessorID: "t1", SecretID: "s1", Type: "client", Roles: []*structs.ACLTokenRoleLink{{ID: "role-1", Name: "readers"}}},
			{AccessorID: "t2", SecretID: "s2", Type: "client", Policies: []string{"ro"}}}}),
		entry(t, 34, structs.ACLTokenDeleteRequestType, &structs.ACLNamesRequest{Names: []string{"t2"}}),
		entry(t, 35, structs.ACLAuthMethodUpsertRequestType, &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{
			{Name: "ci", Type: "JWT", TokenLocality: "local", MaxTokenTTL: time.Hour, Config: &api.ACLAuthMethodConfig{JWKSURL: "https://ci/jwks", BoundAudiences: []string{"d"}}},
			{Name: "old", Type: "JWT"}}}),
		entry(t, 36, structs.ACLAuthMethodDeleteRequestType, &structs.ACLNamesRequest{Names: []string{"old"}}),
		entry(t, 37, structs.ACLBindingRuleUpsertRequestType, &structs.ACLBindingRuleUpsertRequest{Rules: []*structs.ACLBindingRule{
			{ID: "b1", AuthMethod: "ci", BindType: "role", BindName: "readers", Selector: `"x" in list.groups`}, {ID: "b2", AuthMethod: "ci", BindType: "management"}}}),
		entry(t, 38, structs.ACLBindingRuleDeleteRequestType, &structs.ACLNamesRequest{Names: []string{"b2"}}),
		entry(t, 39, structs.OneTimeTokenUpsertRequestType, &structs.OneTimeTokenUpsertRequest{OneTimeToken: &structs.OneTimeToken{
			OneTimeSecretID: "o1", AccessorID: "t1", ExpiresAt: time.Unix(100, 0).UTC()}}),
		entry(t, 40, structs.OneTimeTokenUpsertRequestType, &structs.OneTimeTokenUpsertRequest{OneTimeToken: &structs.OneTimeToken{
			OneTimeSecretID: "o2", AccessorID: "t1", ExpiresAt: time.Unix(100, 0).UTC()}}),
		entry(t, 41, structs.OneTimeTokenExchangeRequestType, &structs.OneTimeTokenExchangeRequest{OneTimeSecretID: "o2"}),
	}
}

// scaledJob has a group and a task scaling policy, their IDs and targets
// set as the server sets them before the Raft entry.
func scaledJob() *structs.Job {
	job := testJob("scaled")
	job.TaskGroups[0].Scaling = &structs.ScalingPolicy{ID: "pol-h", Type: structs.ScalingPolicyTypeHorizontal,
		Min: new(int64(1)), Max: new(int64(4)), Enabled: new(true),
		Policy: map[string]any{"cooldown": "1m", "check": map[string]any{"query": "avg", "weight": 2}}}
	job.TaskGroups[0].Tasks[0].ScalingPolicies = []*structs.ScalingPolicy{{ID: "pol-v", Type: structs.ScalingPolicyTypeVerticalMem, Max: new(int64(512))}}
	job.SetScalingTargets()
	return job
}

func TestApply_AllMessageTypes(t *testing.T) {
	sink := &recordingSink{}
	f := newFSM(t, sink)
	for _, l := range scenario(t) {
		apply(t, f, l)
	}
	st := f.State()

	if m, _ := st.ClusterMetadata(nil); m == nil || m.ClusterID != "c1" {
		t.Errorf("cluster metadata = %+v", m)
	}
	if k, _ := st.RootKeys(nil); len(k) != 1 || !bytes.Equal(k[0].PrivateKey, []byte{1, 2}) {
		t.Errorf("root keys = %+v", k)
	}
	if ns, _ := st.NamespaceByName(nil, "prod"); ns == nil {
		t.Error("namespace prod missing")
	}
	if ns, _ := st.NamespaceByName(nil, "gone"); ns != nil {
		t.Error("namespace gone not deleted")
	}
	if ns, _ := st.NamespaceByName(nil, "ml"); ns == nil || ns.Capabilities == nil || ns.DefaultNodePool() != "gpu" {
		t.Errorf("namespace ml = %+v", ns)
	}
	if p, _ := st.NodePoolByName(nil, "gpu"); p == nil || p.NodeIdentityTTL != time.Hour || p.SchedulerConfiguration.SchedulerAlgorithm != "spread" {
		t.Errorf("node pool gpu = %+v", p)
	}
	if p, _ := st.NodePoolByName(nil, "tmp"); p != nil {
		t.Error("node pool tmp not deleted")
	}
	if p, _ := st.NodePoolByName(nil, "edge"); p == nil || p.CreateIndex != 27 {
		t.Errorf("node pool edge (created by n3's registration) = %+v", p)
	}
	n1, _ := st.NodeByID(nil, "n1")
	if n1 == nil || n1.Status != structs.NodeStatusReady || len(n1.Events) != 1 || n1.LastAllocUpdateIndex != 4 { // registered with nothing to push; see state TestUpdateAllocsFromClient_NodeWrittenOnlyWhenItMatters
		t.Errorf("node n1 = %+v", n1)
	}
	if bySecret, _ := st.NodeBySecretID(nil, "s-n1"); bySecret == nil {
		t.Error("secret ID lost through Raft encoding")
	}
	if n2, _ := st.NodeByID(nil, "n2"); n2 != nil {
		t.Error("n2 not deregistered")
	}
	job, _ := st.JobByID(nil, "default", "web")
	if job == nil || !job.Stop || job.Version != 1 || job.JobModifyIndex != 14 || job.CreateIndex != 9 {
		t.Fatalf("deregistered job = %+v", job)
	}
	if sub, _ := st.JobSubmission(nil, "default", "web", 0); sub == nil || sub.Format != "hcl2" {
		t.Errorf("submission = %+v", sub)
	}
	if j, _ := st.JobByID(nil, "default", "batch"); j != nil {
		t.Error("purged job present")
	}
	a, _ := st.AllocByID(nil, "a1")
	if a == nil || a.ClientStatus != structs.AllocClientStatusFailed || a.Job == nil || a.AllocModifyIndex != 10 || a.ModifyIndex != 13 {
		t.Errorf("alloc = %+v", a)
	}
	if e, _ := st.EvalByID(nil, "e1"); e == nil || e.Status != structs.EvalStatusComplete || e.CreateIndex != 9 {
		t.Errorf("eval e1 = %+v", e)
	}
	if e, _ := st.EvalByID(nil, "e2"); e != nil {
		t.Error("e2 not deleted")
	}
	if d, _ := st.DeploymentByID(nil, "d1"); d == nil || d.TaskGroups["web"].PlacedAllocs != 1 {
		t.Errorf("deployment = %+v", d)
	}
	sum, _ := st.JobSummaryByID(nil, "default", "web")
	if sum.Summary["web"].Failed != 1 {
		t.Errorf("summary = %+v", sum.Summary)
	}
	if v0, _ := st.JobByIDAndVersion(nil, "default", "web", 0); v0 == nil || !v0.Stable || v0.VersionTag == nil || v0.VersionTag.Name != "golden" {
		t.Errorf("version 0 stability/tag = %+v", v0)
	}
	if ev, _ := st.ScalingEventsByJob(nil, "default", "web"); ev == nil || len(ev.ScalingEvents["web"]) != 1 || ev.ScalingEvents["web"][0].CreateIndex != 19 {
		t.Errorf("scaling events = %+v", ev)
	}
	if a2, _ := st.AllocByID(nil, "a2"); a2 == nil || a2.DesiredStatus != structs.AllocDesiredStatusStop || a2.CreateIndex != 21 || a2.Job == nil {
		t.Errorf("batch alloc a2 = %+v", a2)
	}
	if p, _ := st.ScalingPolicyByID(nil, "pol-h"); p == nil || p.CreateIndex != 22 || p.Target["Job"] != "scaled" || p.Policy["cooldown"] != "1m" {
		t.Errorf("scaling policy pol-h = %+v", p)
	}
	if ps, _ := st.ScalingPoliciesByJob(nil, "default", "scaled"); len(ps) != 2 || ps[1].Target["Task"] != "t" {
		t.Errorf("scaled job's policies = %+v", ps)
	}
	if ps, _ := st.ScalingPoliciesByJob(nil, "default", "web"); len(ps) != 0 {
		t.Errorf("web has policies = %+v", ps)
	}
	if idx, _ := st.LatestIndex(); idx != 41 {
		t.Errorf("LatestIndex = %d", idx)
	}
	if tok, _ := st.ACLTokenBySecretID(nil, "s1"); tok == nil || tok.AccessorID != "t1" || tok.CreateIndex != 33 {
		t.Errorf("token t1 = %+v", tok)
	}
	if tok, _ := st.ACLTokenByAccessorID(nil, "t2"); tok != nil {
		t.Error("deleted token t2 still stored")
	}
	if done, _ := st.ACLBootstrapIndex(); done != 28 {
		t.Errorf("bootstrap index = %d", done)
	}
	if r, _ := st.ACLRoleByName(nil, "readers"); r == nil || r.ID != "role-1" {
		t.Errorf("role readers = %+v", r)
	}
	if o, _ := st.OneTimeTokenBySecret(nil, "o2"); o != nil {
		t.Error("exchanged one-time token o2 still stored")
	}

	// Sink: evals carry stored indexes; capacity for ready node and for the
	// alloc that became client-terminal.
	var evalIDs []string
	for _, e := range sink.evals {
		evalIDs = append(evalIDs, e.ID)
		if e.ModifyIndex == 0 {
			t.Errorf("sink eval %s without ModifyIndex", e.ID)
		}
	}
	if want := []string{"e1", "e1", "e2", "e3"}; !reflect.DeepEqual(evalIDs, want) {
		t.Errorf("sink evals = %v, want %v", evalIDs, want)
	}
	wantCap := []capacityCall{{n1.ComputedClass, "n1", 5}, {n1.ComputedClass, "n1", 13}, {n1.ComputedClass, "n1", 21}}
	if !reflect.DeepEqual(sink.capacity, wantCap) {
		t.Errorf("capacity calls = %+v, want %+v", sink.capacity, wantCap)
	}
}

func TestApply_SinkForReadyRegisterEligibilityAndStops(t *testing.T) {
	sink := &recordingSink{}
	f := newFSM(t, sink)
	ready := testNode("n1")
	ready.Status = structs.NodeStatusReady
	apply(t, f, entry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: ready}))
	if len(sink.capacity) != 1 || sink.capacity[0].node != "n1" {
		t.Fatalf("register ready: %+v", sink.capacity)
	}
	apply(t, f, entry(t, 2, structs.NodeUpdateEligibilityRequestType, &structs.NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: structs.NodeSchedulingIneligible}))
	apply(t, f, entry(t, 3, structs.NodeUpdateEligibilityRequestType, &structs.NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: structs.NodeSchedulingEligible}))
	if len(sink.capacity) != 2 || sink.capacity[1].index != 3 {
		t.Fatalf("eligibility: %+v", sink.capacity)
	}
	sink.reset()
	job := testJob("web")
	apply(t, f, entry(t, 4, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job}))
	apply(t, f, entry(t, 5, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: job, Alloc: []*structs.Allocation{
		{ID: "a1", Namespace: "default", NodeID: "n1", JobID: "web", TaskGroup: "web", DesiredStatus: "run", ClientStatus: "pending"}}}))
	apply(t, f, entry(t, 6, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		AllocsStopped:   []*structs.Allocation{{ID: "a1", DesiredStatus: structs.AllocDesiredStatusStop}},
		PreemptionEvals: []*structs.Evaluation{testEval("p1", "web", structs.EvalStatusPending)},
	}))
	if len(sink.capacity) != 1 || sink.capacity[0] != (capacityCall{sink.capacity[0].class, "n1", 6}) {
		t.Fatalf("plan stop capacity: %+v", sink.capacity)
	}
	if len(sink.evals) != 1 || sink.evals[0].ID != "p1" || sink.evals[0].CreateIndex != 6 {
		t.Fatalf("preemption evals: %+v", sink.evals)
	}
	// Swapping the sink while applying is safe.
	f.SetSink(nil)
	apply(t, f, entry(t, 7, structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{testEval("e9", "web", "pending")}}))
	if len(sink.evals) != 1 {
		t.Fatal("nil sink still called")
	}
}

// A batch entry applies its plans in order in one transaction: the second
// plan sees the first's placement, the sink hears of both, and a failing plan
// leaves nothing of the batch behind.
func TestApply_PlanResultsBatch(t *testing.T) {
	sink := &recordingSink{}
	f := newFSM(t, sink)
	job := readyNodeAndJob(t, f, nil)
	sink.reset()
	place := func(id string) *structs.Allocation {
		return &structs.Allocation{ID: id, Namespace: "default", NodeID: "n1", JobID: "web", TaskGroup: "web",
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending}
	}
	apply(t, f, entry(t, 3, structs.ApplyPlanResultsBatchRequestType, &structs.ApplyPlanResultsBatchRequest{Plans: []*structs.ApplyPlanResultsRequest{
		{Job: job, Alloc: []*structs.Allocation{place("a1"), place("a2")}},
		{AllocsStopped: []*structs.Allocation{{ID: "a1", DesiredStatus: structs.AllocDesiredStatusStop}},
			PreemptionEvals: []*structs.Evaluation{testEval("p1", "web", structs.EvalStatusPending)}},
	}}))
	st := f.State()
	a1, _ := st.AllocByID(nil, "a1")
	a2, _ := st.AllocByID(nil, "a2")
	if a1 == nil || a2 == nil || a1.DesiredStatus != structs.AllocDesiredStatusStop || a2.DesiredStatus != structs.AllocDesiredStatusRun {
		t.Fatalf("batch not applied in order: a1=%+v a2=%+v", a1, a2)
	}
	if a1.CreateIndex != 3 || a2.CreateIndex != 3 || a2.Job == nil {
		t.Fatalf("indexes/job: a1=%d a2=%d job=%v", a1.CreateIndex, a2.CreateIndex, a2.Job)
	}
	if len(sink.capacity) != 1 || sink.capacity[0].node != "n1" || len(sink.evals) != 1 || sink.evals[0].ID != "p1" {
		t.Fatalf("sink: capacity=%+v evals=%+v", sink.capacity, sink.evals)
	}

	// The second plan places an alloc of a job that does not exist: the
	// whole entry fails and the first plan's placement is not written.
	orphan := place("a4")
	orphan.JobID = "missing"
	resp := f.Apply(entry(t, 4, structs.ApplyPlanResultsBatchRequestType, &structs.ApplyPlanResultsBatchRequest{Plans: []*structs.ApplyPlanResultsRequest{
		{Job: job, Alloc: []*structs.Allocation{place("a3")}},
		{Alloc: []*structs.Allocation{orphan}},
	}}))
	if resp == nil {
		t.Fatal("a batch with a failing plan must fail")
	}
	if a3, _ := st.AllocByID(nil, "a3"); a3 != nil {
		t.Fatal("a failed batch wrote its first plan")
	}
}

// Evaluation updates riding in a plan batch entry are written (before the
// plans, at the entry's index) and reported to the sink; an entry with only
// eval updates is valid.
func TestApply_PlanResultsBatchWithEvalUpdates(t *testing.T) {
	sink := &recordingSink{}
	f := newFSM(t, sink)
	job := readyNodeAndJob(t, f, testEval("e1", "web", structs.EvalStatusPending))
	sink.reset()
	place := &structs.Allocation{ID: "a1", Namespace: "default", NodeID: "n1", JobID: "web", TaskGroup: "web",
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending}
	apply(t, f, entry(t, 3, structs.ApplyPlanResultsBatchRequestType, &structs.ApplyPlanResultsBatchRequest{
		Plans:       []*structs.ApplyPlanResultsRequest{{Job: job, Alloc: []*structs.Allocation{place}}},
		EvalUpdates: []*structs.Evaluation{testEval("e1", "web", structs.EvalStatusComplete)},
	}))
	st := f.State()
	e1, _ := st.EvalByID(nil, "e1")
	if e1 == nil || e1.Status != structs.EvalStatusComplete || e1.ModifyIndex != 3 || e1.CreateIndex != 2 {
		t.Fatalf("eval after the entry: %+v", e1)
	}
	if a1, _ := st.AllocByID(nil, "a1"); a1 == nil || a1.CreateIndex != 3 {
		t.Fatalf("plan of the entry not applied: %+v", a1)
	}
	if len(sink.evals) != 1 || sink.evals[0].ID != "e1" || sink.evals[0].Status != structs.EvalStatusComplete {
		t.Fatalf("sink evals: %+v", sink.evals)
	}

	apply(t, f, entry(t, 4, structs.ApplyPlanResultsBatchRequestType, &structs.ApplyPlanResultsBatchRequest{
		EvalUpdates: []*structs.Evaluation{testEval("e2", "web", structs.EvalStatusComplete)},
	}))
	if e2, _ := st.EvalByID(nil, "e2"); e2 == nil || e2.ModifyIndex != 4 {
		t.Fatalf("eval-only entry: %+v", e2)
	}
}

func TestApply_UnknownAndBadEntries(t *testing.T) {
	f := newFSM(t, nil)
	cases := []struct {
		name    string
		data    []byte
		wantErr bool
	}{
		{"unknown type", []byte{200 &^ 0x80}, true},
		{"unknown type with ignore flag", []byte{0x80 | 99}, false},
		{"known type with ignore flag still applied", mustEncode(t, structs.IgnoreUnknownTypeFlag|structs.NamespaceUpsertRequestType,
			&structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "flagged"}}}), false},
		{"empty entry", nil, true},
		{"garbage body", []byte{byte(structs.NodeRegisterRequestType), 0xc1}, true},
		{"state error surfaces", mustEncode(t, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "nope", Status: "ready"}), true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: c.data})
			if _, isErr := resp.(error); isErr != c.wantErr || (!c.wantErr && resp != nil) {
				t.Fatalf("Apply = %v, wantErr %v", resp, c.wantErr)
			}
		})
	}
	if ns, _ := f.State().NamespaceByName(nil, "flagged"); ns == nil {
		t.Fatal("known type with ignore flag was not applied")
	}
	if resp := f.Apply(&raft.Log{Index: 99, Type: raft.LogNoop}); resp != nil {
		t.Fatalf("noop log: %v", resp)
	}
}

func mustEncode(t *testing.T, mt structs.MessageType, msg any) []byte {
	t.Helper()
	b, err := structs.Encode(mt, msg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// canonical encodes v with sorted map keys, for byte-wise comparisons.
var canonicalHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.Canonical = true
	h.TypeInfos = codec.NewTypeInfos([]string{"codec"})
	return h
}()

// dump returns every table of a store, encoded canonically.
func dump(t *testing.T, st *state.StateStore) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	add := func(table string, v any) {
		var buf bytes.Buffer
		if err := codec.NewEncoder(&buf, canonicalHandle).Encode(v); err != nil {
			t.Fatal(err)
		}
		out[table] = append(out[table], buf.Bytes())
	}
	iters := map[string]func() (memdb.ResultIterator, error){
		"index":           st.Indexes,
		"jobs":            func() (memdb.ResultIterator, error) { return st.Jobs(nil) },
		"job_version":     func() (memdb.ResultIterator, error) { return st.JobVersions(nil) },
		"job_summary":     func() (memdb.ResultIterator, error) { return st.JobSummaries(nil) },
		"job_submission":  func() (memdb.ResultIterator, error) { return st.JobSubmissions(nil) },
		"evals":           func() (memdb.ResultIterator, error) { return st.Evals(nil) },
		"allocs":          func() (memdb.ResultIterator, error) { return st.Allocs(nil) },
		"nodes":           func() (memdb.ResultIterator, error) { return st.Nodes(nil) },
		"deployment":      func() (memdb.ResultIterator, error) { return st.Deployments(nil) },
		"namespaces":      func() (memdb.ResultIterator, error) { return st.Namespaces(nil) },
		"node_pools":      func() (memdb.ResultIterator, error) { return st.NodePools(nil) },
		"scaling_event":   func() (memdb.ResultIterator, error) { return st.ScalingEvents(nil) },
		"scaling_policy":  func() (memdb.ResultIterator, error) { return st.ScalingPolicies(nil) },
		"periodic_launch": func() (memdb.ResultIterator, error) { return st.PeriodicLaunches(nil) },
	}
	for name, f := range iters {
		it, err := f()
		if err != nil {
			t.Fatal(err)
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			add(name, raw)
		}
	}
	keys, _ := st.RootKeys(nil)
	for _, k := range keys {
		add("root_keys", k)
	}
	for _, table := range state.ACLTables {
		rows, err := st.ACLRows(table)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			add(table, r)
		}
	}
	if m, _ := st.ClusterMetadata(nil); m != nil {
		add("cluster_meta", m)
	}
	return out
}

func TestDeterminism(t *testing.T) {
	a, b := newFSM(t, nil), newFSM(t, &recordingSink{})
	for _, l := range scenario(t) {
		apply(t, a, l)
	}
	for _, l := range scenario(t) {
		apply(t, b, l)
	}
	da, db := dump(t, a.State()), dump(t, b.State())
	if !reflect.DeepEqual(da, db) {
		t.Fatal("same log produced different states")
	}
	for _, table := range append([]string{"index", "jobs", "job_version", "job_summary", "job_submission", "evals", "allocs", "nodes", "deployment", "namespaces", "root_keys", "cluster_meta", "scaling_policy"}, state.ACLTables...) {
		if len(da[table]) == 0 {
			t.Errorf("scenario leaves table %s empty: the test would not cover it", table)
		}
	}
}

type bufSink struct {
	bytes.Buffer
	cancelled, closed bool
}

func (s *bufSink) ID() string    { return "test" }
func (s *bufSink) Cancel() error { s.cancelled = true; return nil }
func (s *bufSink) Close() error  { s.closed = true; return nil }

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func TestSnapshotRestore_RoundTrip(t *testing.T) {
	src := newFSM(t, nil)
	for _, l := range scenario(t) {
		apply(t, src, l)
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Writes after the snapshot must not be in it.
	apply(t, src, entry(t, 100, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "late"}}}))
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed=%v cancelled=%v", sink.closed, sink.cancelled)
	}

	dst := newFSM(t, nil)
	apply(t, dst, entry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("stale")}))
	old := dst.State()
	ws := memdb.NewWatchSet()
	ws.Add(old.AbandonCh())
	if err := dst.Restore(nopCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.AbandonCh():
	default:
		t.Fatal("old store not abandoned")
	}
	if dst.State() == old {
		t.Fatal("state not swapped")
	}
	if ns, _ := dst.State().NamespaceByName(nil, "late"); ns != nil {
		t.Fatal("snapshot contains a later write")
	}
	if n, _ := dst.State().NodeByID(nil, "stale"); n != nil {
		t.Fatal("restore kept pre-restore state")
	}

	// Compare with the source as it was at snapshot time: replay the log.
	ref := newFSM(t, nil)
	for _, l := range scenario(t) {
		apply(t, ref, l)
	}
	want, got := dump(t, ref.State()), dump(t, dst.State())
	tables := make([]string, 0, len(want))
	for k := range want {
		tables = append(tables, k)
	}
	sort.Strings(tables)
	for _, table := range tables {
		if !reflect.DeepEqual(want[table], got[table]) {
			t.Errorf("table %s differs after restore (%d vs %d rows)", table, len(want[table]), len(got[table]))
		}
	}
	n, _ := dst.State().NodeByID(nil, "n1")
	if n == nil || n.SecretID != "s-n1" || n.LastAllocUpdateIndex != 4 { // set at registration (4); client updates need not move it
		t.Fatalf("node fields lost in snapshot: %+v", n)
	}
	// A restored policy compares equal to the same spec arriving again
	// through Raft: no rewrite, its ModifyIndex stays.
	apply(t, dst, entry(t, 150, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: scaledJob()}))
	if p, _ := dst.State().ScalingPolicyByID(nil, "pol-h"); p == nil || p.ModifyIndex != 22 {
		t.Fatalf("policy rewritten by an identical spec after restore: %+v", p)
	}
	// The restored store keeps working.
	apply(t, dst, entry(t, 200, structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{testEval("e9", "web", "pending")}}))
	if idx, _ := dst.State().Index("evals"); idx != 200 {
		t.Fatalf("evals index after restore+apply = %d", idx)
	}
}

func TestRestore_Corrupt(t *testing.T) {
	f := newFSM(t, nil)
	before := f.State()
	if err := f.Restore(nopCloser{bytes.NewReader([]byte{0xc1, 0x00})}); err == nil {
		t.Fatal("corrupt snapshot accepted")
	}
	var buf bytes.Buffer
	_ = codec.NewEncoder(&buf, structs.MsgpackHandle).Encode(&SnapshotHeader{Format: snapshotFormat})
	buf.WriteByte(250)
	if err := f.Restore(nopCloser{bytes.NewReader(buf.Bytes())}); err == nil {
		t.Fatal("unknown record type accepted")
	}
	if f.State() != before {
		t.Fatal("failed restore replaced the state")
	}
}

func TestConcurrentApplyAndReads(t *testing.T) {
	f := newFSM(t, &recordingSink{})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			_, _ = f.State().JobByID(nil, "default", "web")
			f.SetSink(&recordingSink{})
		}
	}()
	for _, l := range scenario(t) {
		apply(t, f, l)
	}
	close(done)
	wg.Wait()
}

// A registration batch applies each registration on its own, at the entry's
// index: one without a job fails alone.
func TestApply_JobRegisterBatch(t *testing.T) {
	sink := &recordingSink{}
	f := newFSM(t, sink)
	resp := f.Apply(entry(t, 5, structs.JobRegisterBatchRequestType, &structs.JobRegisterBatchRequest{Jobs: []*structs.JobRegisterRequest{
		{Job: testJob("a"), Eval: testEval("ea", "a", structs.EvalStatusPending)},
		{Job: nil},
		{Job: testJob("b"), Eval: testEval("eb", "b", structs.EvalStatusPending)},
	}}))
	res, ok := resp.(*JobRegisterBatchResult)
	if !ok || len(res.Errors) != 3 {
		t.Fatalf("response %#v", resp)
	}
	if res.Errors[0] != nil || res.Errors[1] == nil || res.Errors[2] != nil {
		t.Fatalf("errors %v", res.Errors)
	}
	st := f.State()
	for _, id := range []string{"a", "b"} {
		j, _ := st.JobByID(nil, "default", id)
		if j == nil || j.JobModifyIndex != 5 {
			t.Fatalf("job %s: %+v", id, j)
		}
		e, _ := st.EvalByID(nil, "e"+id)
		if e == nil || e.CreateIndex != 5 {
			t.Fatalf("eval of %s: %+v", id, e)
		}
	}
	if len(sink.evals) != 2 {
		t.Fatalf("sink heard of %d evals, want 2", len(sink.evals))
	}
}

// readyNodeAndJob registers a ready node "n1" (index 1) and the job "web"
// with eval, if any (index 2), and returns the job as registered.
func readyNodeAndJob(t *testing.T, f *FSM, eval *structs.Evaluation) *structs.Job {
	t.Helper()
	ready := testNode("n1")
	ready.Status = structs.NodeStatusReady
	apply(t, f, entry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: ready}))
	job := testJob("web")
	apply(t, f, entry(t, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: eval}))
	return job
}
