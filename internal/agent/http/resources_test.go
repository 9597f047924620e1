package httpapi

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

func TestAllocationsEndpoints(t *testing.T) {
	env := newEnv(t, nil)
	alloc := &structs.Allocation{
		ID: "a1", Name: "web.frontend[0]", NodeID: "n1", JobID: "web", TaskGroup: "frontend",
		Job:           &structs.Job{ID: "web", Type: "service", TaskGroups: []*structs.TaskGroup{{Name: "frontend", Count: 1}}},
		DesiredStatus: "run", ClientStatus: "running",
		AllocatedResources: &structs.AllocatedResources{
			Tasks:  map[string]*structs.AllocatedTaskResources{"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}}},
			Shared: structs.AllocatedSharedResources{DiskMB: 300, Ports: structs.AllocatedPorts{{Label: "http", Value: 23456, To: 8080, HostIP: "127.0.0.1"}}},
		},
		Metrics:    &structs.AllocMetric{NodesEvaluated: 1, AllocationTime: time.Millisecond},
		TaskStates: map[string]*structs.TaskState{"t": {State: "running", Events: []*structs.TaskEvent{{Type: structs.TaskStarted, Time: 1700000000}}}},
		CreateTime: 1700000000,
	}
	env.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{Alloc: alloc, QueryMeta: meta(30)})
	got, qm, err := env.client.Allocations().Info("a1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "a1" || *got.Job.ID != "web" || got.AllocatedResources.Shared.Ports[0].Value != 23456 ||
		got.AllocatedResources.Tasks["t"].Cpu.CpuShares != 100 || got.TaskStates["t"].Events[0].Type != "Started" || qm.LastIndex != 30 {
		t.Fatalf("alloc %+v", got)
	}
	env.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{QueryMeta: meta(30)})
	_, _, err = env.client.Allocations().Info("nope", nil)
	wantStatus(t, err, 404, "alloc not found")

	env.rpc.reply("Alloc.List", structs.AllocListResponse{Allocations: []*structs.AllocListStub{alloc.Stub()}, QueryMeta: meta(31)})
	stubs, _, err := env.client.Allocations().List(nil)
	if err != nil || len(stubs) != 1 || stubs[0].TaskStates["t"] == nil {
		t.Fatalf("list %+v %v", stubs, err)
	}
	stubs, _, err = env.client.Allocations().List(&api.QueryOptions{Params: map[string]string{"task_states": "false"}})
	if err != nil || len(stubs) != 1 || stubs[0].TaskStates != nil {
		t.Fatalf("task_states=false %+v %v", stubs, err)
	}
	env.rpc.reply("Alloc.List", structs.AllocListResponse{QueryMeta: meta(31)})
	if _, _, body := env.raw(t, "GET", "/v1/allocations", ""); strings.TrimSpace(body) != "[]" {
		t.Fatalf("empty list %q", body)
	}

	env.rpc.reply("Alloc.Stop", structs.AllocStopResponse{EvalID: "e5", Index: 33})
	stop, err := env.client.Allocations().Stop(&api.Allocation{ID: "a1"}, &api.QueryOptions{Params: map[string]string{"no_shutdown_delay": "true"}})
	if err != nil || stop.EvalID != "e5" || stop.LastIndex != 33 {
		t.Fatalf("stop %+v %v", stop, err)
	}
	if sa := env.rpc.last(t, "Alloc.Stop").(*structs.AllocStopRequest); sa.AllocID != "a1" || !sa.NoShutdownDelay {
		t.Fatalf("stop args %+v", sa)
	}
	if code, _, _ := env.raw(t, "GET", "/v1/allocation/a1/stop", ""); code != 405 {
		t.Fatalf("GET stop: %d", code)
	}
}

func TestEvaluationsEndpoints(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Eval.GetEval", structs.SingleEvalResponse{
		Eval:      &structs.Evaluation{ID: "e1", JobID: "web", Status: "blocked", WaitUntil: time.Unix(1700000000, 0).UTC(), FailedTGAllocs: map[string]*structs.AllocMetric{"g": {NodesExhausted: 2}}},
		QueryMeta: meta(40),
	})
	ev, qm, err := env.client.Evaluations().Info("e1", nil)
	if err != nil || ev.ID != "e1" || ev.Status != "blocked" || ev.FailedTGAllocs["g"].NodesExhausted != 2 || qm.LastIndex != 40 {
		t.Fatalf("eval %+v %v", ev, err)
	}
	env.rpc.reply("Eval.GetEval", structs.SingleEvalResponse{QueryMeta: meta(40)})
	_, _, err = env.client.Evaluations().Info("nope", nil)
	wantStatus(t, err, 404, "eval not found")

	env.raw(t, "GET", "/v1/evaluations?job=web&status=pending", "")
	if la := env.rpc.last(t, "Eval.List").(*structs.EvalListRequest); la.FilterJobID != "web" || la.FilterEvalStatus != "pending" {
		t.Fatalf("filters %+v", la)
	}
	evals, _, err := env.client.Evaluations().List(nil)
	if err != nil || evals == nil || len(evals) != 0 {
		t.Fatalf("empty evals %+v %v", evals, err)
	}
	env.rpc.reply("Eval.Allocations", structs.EvalAllocationsResponse{Allocations: []*structs.AllocListStub{{ID: "a1"}}, QueryMeta: meta(41)})
	allocs, _, err := env.client.Evaluations().Allocations("e1", nil)
	if err != nil || len(allocs) != 1 || allocs[0].ID != "a1" {
		t.Fatalf("eval allocs %+v %v", allocs, err)
	}
}

func TestNodesEndpoints(t *testing.T) {
	env := newEnv(t, nil)
	node := &structs.Node{
		ID: "n1", SecretID: "must-not-leak", Name: "node1", Datacenter: "dc1", Status: "ready", SchedulingEligibility: "eligible",
		Attributes: map[string]string{"os.name": "debian", "unique.network.ip-address": "10.0.0.1"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 2},
			Memory: structs.NodeMemoryResources{MemoryMB: 8192}, Disk: structs.NodeDiskResources{DiskMB: 10000}, MinDynamicPort: 20000, MaxDynamicPort: 32000},
		ReservedResources: &structs.NodeReservedResources{Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "22"}},
		Drivers:           map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
	}
	env.rpc.reply("Node.List", structs.NodeListResponse{Nodes: []*structs.NodeListStub{node.Stub(true, true)}, QueryMeta: meta(50)})
	nodes, qm, err := env.client.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true", "os": "true"}})
	if err != nil || len(nodes) != 1 || nodes[0].Address != "10.0.0.1" || nodes[0].NodeResources.Cpu.CpuShares != 4000 || nodes[0].Attributes["os.name"] != "debian" || qm.LastIndex != 50 {
		t.Fatalf("nodes %+v %v", nodes, err)
	}
	if la := env.rpc.last(t, "Node.List").(*structs.NodeListRequest); !la.Resources || !la.OS {
		t.Fatalf("list args %+v", la)
	}
	env.rpc.reply("Node.List", structs.NodeListResponse{QueryMeta: meta(50)})
	if _, _, body := env.raw(t, "GET", "/v1/nodes", ""); strings.TrimSpace(body) != "[]" {
		t.Fatalf("empty nodes %q", body)
	}

	env.rpc.reply("Node.GetNode", structs.SingleNodeResponse{Node: node, QueryMeta: meta(51)})
	n, _, err := env.client.Nodes().Info("n1", nil)
	if err != nil || n.ID != "n1" || n.NodeResources.Memory.MemoryMB != 8192 || !n.Drivers["raw_exec"].Healthy || n.ReservedResources.Networks.ReservedHostPorts != "22" {
		t.Fatalf("node %+v %v", n, err)
	}
	if _, _, body := env.raw(t, "GET", "/v1/node/n1", ""); strings.Contains(body, "must-not-leak") {
		t.Fatal("node secret leaked")
	}
	env.rpc.reply("Node.GetNode", structs.SingleNodeResponse{QueryMeta: meta(51)})
	_, _, err = env.client.Nodes().Info("nope", nil)
	wantStatus(t, err, 404, "node not found")

	env.rpc.reply("Node.GetAllocs", structs.NodeAllocsResponse{Allocs: []*structs.Allocation{{ID: "a1", NodeID: "n1"}}, QueryMeta: meta(52)})
	allocs, _, err := env.client.Nodes().Allocations("n1", nil)
	if err != nil || len(allocs) != 1 || allocs[0].ID != "a1" {
		t.Fatalf("node allocs %+v %v", allocs, err)
	}

	env.rpc.reply("Node.UpdateEligibility", structs.NodeEligibilityUpdateResponse{NodeModifyIndex: 60, QueryMeta: structs.QueryMeta{Index: 60}})
	er, err := env.client.Nodes().ToggleEligibility("n1", false, nil)
	if err != nil || er.NodeModifyIndex != 60 || er.LastIndex != 60 {
		t.Fatalf("eligibility %+v %v", er, err)
	}
	if ea := env.rpc.last(t, "Node.UpdateEligibility").(*structs.NodeUpdateEligibilityRequest); ea.NodeID != "n1" || ea.Eligibility != "ineligible" {
		t.Fatalf("eligibility args %+v", ea)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/node/n1/eligibility", `{"Eligibility":"maybe"}`); code != 400 || !strings.Contains(body, "maybe") {
		t.Fatalf("bad eligibility: %d %q", code, body)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/node/n1/drain", `{"NodeID":"n2"}`); code != 400 || !strings.Contains(body, "does not match") {
		t.Fatalf("drain of another node's path: %d %q", code, body)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/node/n1/drain", `{"DrainSpec":{"Deadline":"soon"}}`); code != 400 {
		t.Fatalf("drain with a bad deadline: %d %q", code, body)
	}
}

func TestDeploymentsEndpoints(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Deployment.GetDeployment", structs.SingleDeploymentResponse{
		Deployment: &structs.Deployment{ID: "d1", JobID: "web", Status: "successful", TaskGroups: map[string]*structs.DeploymentState{"g": {HealthyAllocs: 2, PlacedCanaries: []string{"a1"}}}},
		QueryMeta:  meta(70),
	})
	d, qm, err := env.client.Deployments().Info("d1", nil)
	if err != nil || d.ID != "d1" || d.TaskGroups["g"].HealthyAllocs != 2 || !d.TaskGroups["g"].RequireProgressBy.IsZero() || qm.LastIndex != 70 {
		t.Fatalf("deployment %+v %v", d, err)
	}
	env.rpc.reply("Deployment.GetDeployment", structs.SingleDeploymentResponse{QueryMeta: meta(70)})
	_, _, err = env.client.Deployments().Info("nope", nil)
	wantStatus(t, err, 404, "deployment not found")

	deps, _, err := env.client.Deployments().List(nil)
	if err != nil || deps == nil || len(deps) != 0 {
		t.Fatalf("deployments %+v %v", deps, err)
	}
	env.rpc.reply("Deployment.Allocations", structs.AllocListResponse{Allocations: []*structs.AllocListStub{{ID: "a1"}}, QueryMeta: meta(71)})
	allocs, _, err := env.client.Deployments().Allocations("d1", nil)
	if err != nil || len(allocs) != 1 {
		t.Fatalf("deployment allocs %+v %v", allocs, err)
	}
	if da := env.rpc.last(t, "Deployment.Allocations").(*structs.DeploymentSpecificRequest); da.DeploymentID != "d1" {
		t.Fatalf("args %+v", da)
	}
}

func TestStatusRegionsNamespaces(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Status.Leader", "127.0.0.1:4647")
	leader, err := env.client.Status().Leader()
	if err != nil || leader != "127.0.0.1:4647" {
		t.Fatalf("leader %q %v", leader, err)
	}
	_, hdr, _ := env.raw(t, "GET", "/v1/status/leader", "")
	if hdr.Get("X-Nomad-Index") == "" || hdr.Get("X-Nomad-KnownLeader") != "true" || hdr.Get("X-Nomad-LastContact") == "" {
		t.Fatalf("leader headers %v", hdr)
	}
	peers, err := env.client.Status().Peers()
	if err != nil || peers == nil || len(peers) != 0 {
		t.Fatalf("peers %v %v", peers, err)
	}
	env.rpc.reply("Region.List", []string{"east", "global"})
	regions, err := env.client.Regions().List()
	if err != nil || len(regions) != 2 {
		t.Fatalf("regions %v %v", regions, err)
	}
	env.rpc.reply("Namespace.ListNamespaces", structs.NamespaceListResponse{Namespaces: []*structs.Namespace{{Name: "default", Description: "Default shared namespace"}}, QueryMeta: meta(80)})
	nss, _, err := env.client.Namespaces().List(nil)
	if err != nil || len(nss) != 1 || nss[0].Name != "default" {
		t.Fatalf("namespaces %+v %v", nss, err)
	}
	env.rpc.reply("Namespace.GetNamespace", structs.SingleNamespaceResponse{Namespace: &structs.Namespace{Name: "prod"}, QueryMeta: meta(81)})
	ns, _, err := env.client.Namespaces().Info("prod", nil)
	if err != nil || ns.Name != "prod" {
		t.Fatalf("namespace %+v %v", ns, err)
	}
	env.rpc.reply("Namespace.GetNamespace", structs.SingleNamespaceResponse{QueryMeta: meta(81)})
	_, _, err = env.client.Namespaces().Info("nope", nil)
	wantStatus(t, err, 404, "namespace not found")
}

func TestAgentEndpoints(t *testing.T) {
	agent := &fakeAgent{serverOK: true}
	env := newEnv(t, func(c *Config) { c.Agent = agent })
	self, err := env.client.Agent().Self()
	if err != nil || self.Member.Name != "n1.global" || self.Stats["nomad"]["leader"] != "true" || self.Config["Region"] != "global" {
		t.Fatalf("self %+v %v", self, err)
	}
	members, err := env.client.Agent().MembersOpts(nil)
	if err != nil || members.ServerName != "n1" || members.Members == nil {
		t.Fatalf("members %+v %v", members, err)
	}
	h, err := env.client.Agent().Health()
	if err != nil || !h.Server.Ok || !h.Client.Ok {
		t.Fatalf("health %+v %v", h, err)
	}
	agent.serverOK = false
	code, _, body := env.raw(t, "GET", "/v1/agent/health", "")
	if code != 500 || !strings.Contains(body, `"ok":false`) || !strings.Contains(body, "No cluster leader") {
		t.Fatalf("unhealthy: %d %q", code, body)
	}
	h, err = env.client.Agent().Health()
	if err != nil || h.Server.Ok || h.Server.Message != "No cluster leader" {
		t.Fatalf("health %+v %v", h, err)
	}
	if code, _, body := env.raw(t, "GET", "/v1/agent/health?type=client", ""); code != 200 || strings.Contains(body, "server") {
		t.Fatalf("client-only health: %d %q", code, body)
	}
}

func TestMetrics(t *testing.T) {
	sink := metrics.NewInmemSink(10*time.Second, time.Minute)
	sink.SetGaugeWithLabels([]string{"nomad", "test", "gauge"}, 3, []metrics.Label{{Name: "host", Value: "a"}})
	sink.IncrCounter([]string{"nomad", "test", "counter"}, 2)
	env := newEnv(t, func(c *Config) {
		c.MetricsSink = sink
		c.PromHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			w.Write([]byte("# HELP nomad_test_gauge x\nnomad_test_gauge 3\n"))
		})
	})
	raw, err := env.client.Operator().Metrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	var sum api.MetricsSummary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatalf("decode %v: %s", err, raw)
	}
	if len(sum.Gauges) != 1 || sum.Gauges[0].Name != "nomad.test.gauge" || sum.Gauges[0].Value != 3 || sum.Gauges[0].DisplayLabels["host"] != "a" || len(sum.Counters) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	prom, err := env.client.Operator().Metrics(&api.QueryOptions{Params: map[string]string{"format": "prometheus"}})
	if err != nil || !strings.Contains(string(prom), "nomad_test_gauge 3") {
		t.Fatalf("prometheus %q %v", prom, err)
	}

	bare := newEnv(t, nil)
	if code, _, body := bare.raw(t, "GET", "/v1/metrics", ""); code != 200 || !strings.Contains(body, "Gauges") {
		t.Fatalf("metrics without a sink: %d %q", code, body)
	}
	if code, _, body := bare.raw(t, "GET", "/v1/metrics?format=prometheus", ""); code != http.StatusUnsupportedMediaType || !strings.Contains(body, "Prometheus is not enabled") {
		t.Fatalf("prometheus without handler: %d %q", code, body)
	}
}

func TestJWKS(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaDER, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	edDER, _ := x509.MarshalPKIXPublicKey(edPub)

	env := newEnv(t, nil)
	env.rpc.reply("Keyring.ListPublic", structs.KeyringListPublicResponse{
		PublicKeys: []*structs.KeyringPublicKey{
			{KeyID: "rsa-1", PublicKey: rsaDER, Algorithm: "RS256", Use: "sig"},
			{KeyID: "ed-1", PublicKey: edDER, Algorithm: "EdDSA"},
			{KeyID: "broken", PublicKey: []byte("nope")},
		},
		QueryMeta: meta(90),
	})
	code, hdr, body := env.raw(t, "GET", "/.well-known/jwks.json", "")
	if code != 200 || hdr.Get("X-Nomad-Index") != "90" {
		t.Fatalf("jwks %d %v", code, hdr)
	}
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal([]byte(body), &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("want 2 usable keys, got %s", body)
	}
	rk, ek := set.Keys[0], set.Keys[1]
	b64 := base64.RawURLEncoding
	n, _ := b64.DecodeString(rk["n"])
	e, _ := b64.DecodeString(rk["e"])
	if rk["kty"] != "RSA" || rk["kid"] != "rsa-1" || rk["use"] != "sig" || rk["alg"] != "RS256" ||
		new(big.Int).SetBytes(n).Cmp(rsaKey.N) != 0 || new(big.Int).SetBytes(e).Int64() != int64(rsaKey.E) {
		t.Fatalf("rsa jwk %v", rk)
	}
	x, _ := b64.DecodeString(ek["x"])
	if ek["kty"] != "OKP" || ek["crv"] != "Ed25519" || ek["kid"] != "ed-1" || ek["use"] != "sig" || ek["alg"] != "EdDSA" || !ed25519.PublicKey(x).Equal(edPub) {
		t.Fatalf("ed25519 jwk %v", ek)
	}

	env.rpc.reply("Keyring.ListPublic", structs.KeyringListPublicResponse{QueryMeta: meta(1)})
	if _, _, body := env.raw(t, "GET", "/.well-known/jwks.json", ""); strings.TrimSpace(body) != `{"keys":[]}` {
		t.Fatalf("empty jwks %q", body)
	}
}
