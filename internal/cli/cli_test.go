package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// fixed clock so relative times in golden output are stable.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func init() {
	now = func() time.Time { return t0 }
	time.Local = time.UTC
}

// fake answers api paths with canned responses and records requests.
type fake struct {
	routes map[string]any // "METHOD /path" -> JSON body
	seen   []string
}

func (f *fake) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		f.seen = append(f.seen, key+"?"+r.URL.RawQuery)
		body, ok := f.routes[key]
		if !ok {
			http.Error(w, "no route "+key, http.StatusNotFound)
			return
		}
		w.Header().Set("X-Nomad-Index", "10")
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func run(t *testing.T, srv *httptest.Server, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	if srv != nil && len(args) > 0 {
		// global flags go after the verb path; find where flags may start.
		i := 0
		for i < len(args) && !strings.HasPrefix(args[i], "-") && i < 3 && isVerb(args[:i+1]) {
			i++
		}
		args = append(append(append([]string{}, args[:i]...), "-address="+srv.URL), args[i:]...)
	}
	code := Run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func isVerb(path []string) bool {
	_, ok := Commands(nil, nil)[strings.Join(path, " ")]
	return ok
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	if os.Getenv("UPDATE_GOLDEN") == "1" { // review the diff before committing
		if err := os.WriteFile(filepath.Join("testdata", name), []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func ptr[T any](v T) *T { return &v }

const (
	allocID = "8ba85cef-0000-4000-8000-000000000001"
	nodeID  = "171a583b-0000-4000-8000-000000000002"
	evalID  = "61b0b423-0000-4000-8000-000000000003"
)

func sampleJob() *api.Job {
	return &api.Job{
		ID: ptr("example"), Name: ptr("example"), Type: ptr("service"), Priority: ptr(50),
		Datacenters: []string{"dc1"}, Namespace: ptr("default"), NodePool: ptr("default"),
		Status: ptr("running"), SubmitTime: ptr(t0.Add(-time.Hour).UnixNano()), Version: ptr(uint64(0)),
		TaskGroups: []*api.TaskGroup{{Name: ptr("cache"), Tasks: []*api.Task{{Name: "redis", Driver: "docker"}}}},
	}
}

func TestVersion(t *testing.T) {
	for _, a := range []string{"-version", "--version", "-v", "version"} {
		out, _, code := run(t, nil, a)
		if code != 0 || out != "Drover v"+Version+"\n" {
			t.Errorf("%s: code %d out %q", a, code, out)
		}
	}
}

func TestUnknownCommandShowsHelp(t *testing.T) {
	out, errb, code := run(t, nil, "frobnicate")
	if code == 0 {
		t.Fatal("unknown command must fail")
	}
	all := out + errb
	for _, w := range []string{"Usage: drover", "job", "alloc", "node", "server", "status"} {
		if !strings.Contains(all, w) {
			t.Errorf("help lacks %q:\n%s", w, all)
		}
	}
}

func TestAgentNotLinked(t *testing.T) {
	_, errb, code := run(t, nil, "agent")
	if code != 1 || !strings.Contains(errb, "agent: not linked in this build") {
		t.Fatalf("code %d err %q", code, errb)
	}
}

func TestJobStatusList(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/jobs": []*api.JobListStub{
			{ID: "example", Type: "service", Priority: 50, Status: "running", SubmitTime: t0.UnixNano()},
			{ID: "nightly", Type: "batch", Priority: 70, Status: "running", Periodic: true, SubmitTime: t0.UnixNano()},
		},
	}}
	out, errb, code := run(t, f.server(t), "job", "status")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "job_status_list.txt", out)
}

func TestJobStatusDetail(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/job/example": sampleJob(),
		"GET /v1/job/example/summary": &api.JobSummary{JobID: "example", Summary: map[string]api.TaskGroupSummary{
			"cache": {Running: 1, Failed: 2},
		}},
		"GET /v1/job/example/evaluations": []*api.Evaluation{{ID: evalID, Priority: 50, TriggeredBy: "job-register", Status: "complete", CreateIndex: 5}},
		"GET /v1/job/example/allocations": []*api.AllocationListStub{{
			ID: allocID, NodeID: nodeID, TaskGroup: "cache", JobVersion: 0, DesiredStatus: "run", ClientStatus: "running",
			CreateTime: t0.Add(-5 * time.Minute).UnixNano(), ModifyTime: t0.Add(-90 * time.Second).UnixNano(),
		}},
	}}
	out, errb, code := run(t, f.server(t), "job", "status", "example")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "job_status_detail.txt", out)
}

func TestAllocStatus(t *testing.T) {
	alloc := &api.Allocation{
		ID: allocID, EvalID: evalID, Name: "example.cache[0]", NodeID: nodeID, NodeName: "node1", JobID: "example",
		Job: sampleJob(), TaskGroup: "cache", ClientStatus: "running", ClientDescription: "Tasks are running",
		DesiredStatus: "run", CreateTime: t0.Add(-5 * time.Minute).UnixNano(), ModifyTime: t0.Add(-time.Minute).UnixNano(),
		TaskStates: map[string]*api.TaskState{"redis": {
			State: "running", StartedAt: t0.Add(-4 * time.Minute),
			Events: []*api.TaskEvent{
				{Type: "Received", Time: t0.Add(-5 * time.Minute).UnixNano(), DisplayMessage: "Task received by client"},
				{Type: "Started", Time: t0.Add(-4 * time.Minute).UnixNano(), DisplayMessage: "Task started by client"},
			},
		}},
	}
	f := &fake{routes: map[string]any{
		"GET /v1/allocations":           []*api.AllocationListStub{{ID: allocID}},
		"GET /v1/allocation/" + allocID: alloc,
	}}
	out, errb, code := run(t, f.server(t), "alloc", "status", "8ba8")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "alloc_status.txt", out)
}

// TestAllocStatusDetail is what an operator reads about a running service
// allocation: its deployment health, the ports it answers on (host address
// -> the port inside), each task's use against what it was given, its
// lifecycle, and with -short one table of tasks; -verbose adds the
// scheduler's placement metrics.
func TestAllocStatusDetail(t *testing.T) {
	job := sampleJob()
	job.TaskGroups[0].EphemeralDisk = &api.EphemeralDisk{SizeMB: ptr(300)}
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Attempts: ptr(3), Unlimited: ptr(false)}
	job.TaskGroups[0].Tasks = append(job.TaskGroups[0].Tasks, &api.Task{Name: "init", Driver: "raw_exec",
		Lifecycle: &api.TaskLifecycle{Hook: "prestart"}})
	healthy := true
	alloc := &api.Allocation{
		ID: allocID, EvalID: evalID, Name: "example.cache[0]", NodeID: nodeID, NodeName: "node1", JobID: "example",
		Job: job, TaskGroup: "cache", ClientStatus: "running", ClientDescription: "Tasks are running",
		DesiredStatus: "run", CreateTime: t0.Add(-5 * time.Minute).UnixNano(), ModifyTime: t0.Add(-time.Minute).UnixNano(),
		DeploymentID:      "0c83a3b1-0000-4000-8000-000000000009",
		DeploymentStatus:  &api.AllocDeploymentStatus{Healthy: &healthy},
		RescheduleTracker: &api.RescheduleTracker{Events: []*api.RescheduleEvent{{PrevAllocID: "x"}}},
		AllocatedResources: &api.AllocatedResources{
			Tasks: map[string]*api.AllocatedTaskResources{
				"redis": {Cpu: api.AllocatedCpuResources{CpuShares: 500}, Memory: api.AllocatedMemoryResources{MemoryMB: 256}},
				"init":  {Cpu: api.AllocatedCpuResources{CpuShares: 100}, Memory: api.AllocatedMemoryResources{MemoryMB: 64, MemoryMaxMB: 128}},
			},
			Shared: api.AllocatedSharedResources{DiskMB: 300, Networks: []*api.NetworkResource{{
				Mode: "host", IP: "10.0.0.5",
				ReservedPorts: []api.Port{{Label: "admin", Value: 8081}},
				DynamicPorts:  []api.Port{{Label: "db", Value: 28359, To: 6379}},
			}}},
		},
		Metrics: &api.AllocationMetric{NodesEvaluated: 2, ConstraintFiltered: map[string]int{"${attr.kernel.name} = linux": 1},
			ScoreMetaData: []*api.NodeScoreMeta{{NodeID: nodeID, Scores: map[string]float64{"binpack": 0.0238, "job-anti-affinity": 0}, NormScore: 0.0238}}},
		TaskStates: map[string]*api.TaskState{
			"redis": {State: "running", StartedAt: t0.Add(-4 * time.Minute), Events: []*api.TaskEvent{
				{Type: "Received", Time: t0.Add(-5 * time.Minute).UnixNano(), DisplayMessage: "Task received by client"},
				{Type: "Started", Time: t0.Add(-4 * time.Minute).UnixNano(), DisplayMessage: "Task started by client"},
			}},
			"init": {State: "dead", StartedAt: t0.Add(-5 * time.Minute), FinishedAt: t0.Add(-4 * time.Minute), Events: []*api.TaskEvent{
				{Type: "Terminated", Time: t0.Add(-4 * time.Minute).UnixNano(), DisplayMessage: "Exit Code: 0"},
			}},
		},
	}
	usage := &api.AllocResourceUsage{Tasks: map[string]*api.TaskResourceUsage{"redis": {ResourceUsage: &api.ResourceUsage{
		CpuStats: &api.CpuStats{TotalTicks: 8}, MemoryStats: &api.MemoryStats{RSS: 6606028}}}}}
	f := &fake{routes: map[string]any{
		"GET /v1/allocations":                             []*api.AllocationListStub{{ID: allocID}},
		"GET /v1/allocation/" + allocID:                   alloc,
		"GET /v1/client/allocation/" + allocID + "/stats": usage,
	}}
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"alloc_status_detail.txt", []string{"alloc", "status", "8ba8"}},
		{"alloc_status_short.txt", []string{"alloc", "status", "-short", "8ba8"}},
		{"alloc_status_verbose.txt", []string{"alloc", "status", "-verbose", "8ba8"}},
	} {
		out, errb, code := run(t, f.server(t), c.args...)
		if code != 0 {
			t.Fatalf("%v: code %d: %s", c.args, code, errb)
		}
		golden(t, c.golden, out)
	}
}

func TestNodeStatusList(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/nodes": []*api.NodeListStub{{ID: nodeID, NodePool: "default", Datacenter: "dc1", Name: "node1",
			SchedulingEligibility: "eligible", Status: "ready"}},
	}}
	out, errb, code := run(t, f.server(t), "node", "status")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "node_status_list.txt", out)
}

func TestServerMembers(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/agent/members": &api.ServerMembers{Members: []*api.AgentMember{
			{Name: "s1.global", Addr: "10.0.0.1", Port: 4648, Status: "alive", Tags: map[string]string{
				"region": "global", "dc": "dc1", "port": "4647", "raft_vsn": "3", "build": "0.1.0"}},
			{Name: "s2.global", Addr: "10.0.0.2", Port: 4648, Status: "alive", Tags: map[string]string{
				"region": "global", "dc": "dc1", "port": "4647", "raft_vsn": "3", "build": "0.1.0"}},
		}},
		"GET /v1/status/leader": "10.0.0.2:4647",
	}}
	out, errb, code := run(t, f.server(t), "server", "members")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "server_members.txt", out)
}

func TestJobValidateBrokenFileNamesLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "broken.hcl")
	os.WriteFile(p, []byte("job \"x\" {\n  group \"g\" {\n    task \"t\" {\n      drivr = \"docker\"\n    }\n  }\n}\n"), 0o644)
	_, errb, code := run(t, nil, "job", "validate", p)
	if code == 0 {
		t.Fatal("validate of a broken file must fail")
	}
	if !strings.Contains(errb, p+":4,7:") || !strings.Contains(errb, "drivr") {
		t.Fatalf("error does not name file:line and attribute: %q", errb)
	}
}

func TestJobValidateAgainstServer(t *testing.T) {
	p := filepath.Join("..", "jobspec", "testdata", "minimal.hcl")
	f := &fake{routes: map[string]any{"PUT /v1/validate/job": &api.JobValidateResponse{}}}
	out, errb, code := run(t, f.server(t), "job", "validate", p)
	if code != 0 || out != "Job validation successful\n" {
		t.Fatalf("code %d out %q err %q", code, out, errb)
	}
	f.routes["PUT /v1/validate/job"] = &api.JobValidateResponse{ValidationErrors: []string{"Missing datacenters"}, Error: "1 error occurred:\n\t* Missing datacenters"}
	_, errb, code = run(t, f.server(t), "job", "validate", p)
	if code != 1 || !strings.Contains(errb, "Missing datacenters") {
		t.Fatalf("code %d err %q", code, errb)
	}
}

func nodeStatusRoutes() map[string]any {
	node := &api.Node{ID: nodeID, Name: "node1", NodePool: "default", Datacenter: "dc1", Status: "ready",
		SchedulingEligibility: "eligible", Drivers: map[string]*api.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 4000}, Memory: api.NodeMemoryResources{MemoryMB: 8192},
			Disk: api.NodeDiskResources{DiskMB: 102400}},
		ReservedResources: &api.NodeReservedResources{Cpu: api.NodeReservedCpuResources{CpuShares: 100}}}
	running := &api.Allocation{ID: "a1b2c3d4-0000-0000-0000-000000000000", NodeID: nodeID, TaskGroup: "web", DesiredStatus: "run",
		ClientStatus: "running", CreateIndex: 2, CreateTime: t0.Add(-time.Minute).UnixNano(), ModifyTime: t0.Add(-time.Minute).UnixNano(),
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
			"t": {Cpu: api.AllocatedCpuResources{CpuShares: 500}, Memory: api.AllocatedMemoryResources{MemoryMB: 256}}},
			Shared: api.AllocatedSharedResources{DiskMB: 300}}}
	done := &api.Allocation{ID: "e5f6a7b8-0000-0000-0000-000000000000", NodeID: nodeID, TaskGroup: "web", DesiredStatus: "run",
		ClientStatus: "complete", CreateIndex: 1, CreateTime: t0.Add(-time.Hour).UnixNano(), ModifyTime: t0.Add(-time.Hour).UnixNano(),
		AllocatedResources: running.AllocatedResources}
	return map[string]any{
		"GET /v1/agent/self":                      &api.AgentSelf{Stats: map[string]map[string]string{"client": {"node_id": nodeID}}},
		"GET /v1/nodes":                           []*api.NodeListStub{{ID: nodeID, Name: "node1"}},
		"GET /v1/node/" + nodeID:                  node,
		"GET /v1/node/" + nodeID + "/allocations": []*api.Allocation{running, done},
		"GET /v1/client/stats": &api.HostStats{Memory: &api.HostMemoryStats{Total: 8 << 30, Available: 6 << 30, Used: 2 << 30, Free: 1 << 30},
			CPU:              []*api.HostCPUStats{{CPU: "cpu0", User: 12.5, System: 2.5, Idle: 85}, {CPU: "cpu1", User: 1, System: 1, Idle: 98}},
			DiskStats:        []*api.HostDiskStats{{Device: "/dev/vda1", Mountpoint: "/", Size: 100 << 30, Used: 40 << 30, Available: 55 << 30, UsedPercent: 42.1, InodesUsedPercent: 3}},
			AllocDirStats:    &api.HostDiskStats{Device: "/dev/vda1", Mountpoint: "/", Size: 100 << 30, Used: 40 << 30},
			CPUTicksConsumed: 1234.4, Uptime: 3600},
	}
}

// -self finds the agent's own node; its allocations' resources and the
// host's use are shown, and -stats adds the per-core and per-disk figures.
func TestNodeStatusSelfStats(t *testing.T) {
	f := &fake{routes: nodeStatusRoutes()}
	out, errb, code := run(t, f.server(t), "node", "status", "-self", "-stats")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "node_status_self_stats.txt", out)
	if !strings.Contains(strings.Join(f.seen, " "), "GET /v1/agent/self") {
		t.Fatalf("-self did not ask the agent: %v", f.seen)
	}
}

// A node whose agent is not the one asked: no host figures, and -stats
// says why.
func TestNodeStatusWithoutHostStats(t *testing.T) {
	routes := nodeStatusRoutes()
	delete(routes, "GET /v1/client/stats")
	f := &fake{routes: routes}
	out, _, code := run(t, f.server(t), "node", "status", nodeID[:8])
	if code != 0 || strings.Contains(out, "Host Resource Utilization") || !strings.Contains(out, "500/3900 MHz") {
		t.Fatalf("code %d:\n%s", code, out)
	}
	_, errb, code := run(t, f.server(t), "node", "status", "-stats", nodeID[:8])
	if code != 0 || !strings.Contains(errb, "Host stats unavailable") {
		t.Fatalf("code %d, stderr %q", code, errb)
	}
	if _, errb, code := run(t, f.server(t), "node", "status", "-self", nodeID[:8]); code != 1 || !strings.Contains(errb, "none with -self") {
		t.Fatalf("-self with a node: code %d %q", code, errb)
	}
}

func TestOperatorRaft(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/operator/raft/configuration": &api.RaftConfiguration{Index: 12, Servers: []*api.RaftServer{
			{ID: "9d4e6e3a-0000-4000-8000-000000000001", Node: "s1.global", Address: "10.0.0.1:4647", Leader: true, Voter: true, RaftProtocol: "3"},
			{ID: "9d4e6e3a-0000-4000-8000-000000000002", Node: "10.0.0.2:4647", Address: "10.0.0.2:4647", Voter: true, RaftProtocol: "3"},
		}},
		"DELETE /v1/operator/raft/peer": nil,
	}}
	out, errb, code := run(t, f.server(t), "operator", "raft", "list-peers")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "operator_raft_list_peers.txt", out)
	// -stale asks the server itself (an outage has no leader to ask).
	if _, errb, code := run(t, f.server(t), "operator", "raft", "list-peers", "-stale"); code != 0 {
		t.Fatalf("-stale: code %d: %s", code, errb)
	}
	if got := f.seen[len(f.seen)-1]; got != "GET /v1/operator/raft/configuration?stale=" {
		t.Fatalf("-stale request %q", got)
	}

	out, errb, code = run(t, f.server(t), "operator", "raft", "remove-peer", "-peer-address", "10.0.0.2:4647")
	if code != 0 || !strings.Contains(out, `Removed peer with address "10.0.0.2:4647"`) {
		t.Fatalf("code %d: %s %s", code, out, errb)
	}
	if got := f.seen[len(f.seen)-1]; got != "DELETE /v1/operator/raft/peer?address=10.0.0.2%3A4647" {
		t.Fatalf("request %q", got)
	}
	if _, errb, code := run(t, f.server(t), "operator", "raft", "remove-peer"); code != 1 || !strings.Contains(errb, "Exactly one of -peer-id and -peer-address") {
		t.Fatalf("no peer: code %d %q", code, errb)
	}
}

// -verbose lists the node's attributes (bridge support among them) and
// meta, as Nomad's does; without it they are left out.
func TestNodeStatusVerboseAttributes(t *testing.T) {
	routes := nodeStatusRoutes()
	n := *routes["GET /v1/node/"+nodeID].(*api.Node)
	n.Attributes = map[string]string{"plugins.cni.version.bridge": "0.1.0", "kernel.name": "linux"}
	n.Meta = map[string]string{"rack": "r1"}
	routes["GET /v1/node/"+nodeID] = &n
	f := &fake{routes: routes}
	out, errb, code := run(t, f.server(t), "node", "status", "-verbose", nodeID[:8])
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	for _, want := range []string{"\nAttributes\nkernel.name                = linux\nplugins.cni.version.bridge = 0.1.0\n", "\nMeta\nrack = r1\n", nodeID} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = run(t, f.server(t), "node", "status", nodeID[:8])
	if strings.Contains(out, "Attributes") {
		t.Fatalf("attributes without -verbose:\n%s", out)
	}
}

// With -namespace='*' the job list has a Namespace column, as Nomad's: the
// same job ID in two namespaces was listed twice with nothing to tell the
// rows apart, and so was a prefix matching both.
func TestJobStatusAllNamespacesShowsNamespace(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/jobs": []*api.JobListStub{
			{ID: "web", Namespace: "default", Type: "service", Priority: 50, Status: "running", SubmitTime: t0.UnixNano()},
			{ID: "web", Namespace: "team-a", Type: "service", Priority: 50, Status: "pending", SubmitTime: t0.UnixNano()},
		},
	}}
	srv := f.server(t)
	out, errb, code := run(t, srv, "job", "status", "-namespace=*")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID   Namespace  Type") ||
		!strings.HasPrefix(lines[1], "web  default    service") || !strings.HasPrefix(lines[2], "web  team-a     service") {
		t.Fatalf("job status -namespace='*':\n%s", out)
	}
	// One namespace: no column, as before.
	out, _, _ = run(t, srv, "job", "status", "-namespace=default")
	if strings.Contains(out, "Namespace") {
		t.Fatalf("job status in one namespace shows the column:\n%s", out)
	}
	// An ID in two namespaces: the ambiguity names them.
	_, errb, code = run(t, srv, "job", "status", "-namespace=*", "web")
	if code != 1 || !strings.Contains(errb, "Prefix matched multiple jobs") || !strings.Contains(errb, "team-a") {
		t.Fatalf("ambiguous job: code %d\n%s", code, errb)
	}
}
