package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

func TestNamespaceWrites(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Namespace.UpsertNamespaces", structs.GenericResponse{WriteMeta: structs.WriteMeta{Index: 7}})
	wm, err := env.client.Namespaces().Register(&api.Namespace{
		Name: "team-a", Description: "A",
		Capabilities:          &api.NamespaceCapabilities{DisabledTaskDrivers: []string{"raw_exec"}, EnabledNetworkModes: []string{"bridge"}},
		NodePoolConfiguration: &api.NamespaceNodePoolConfiguration{Default: "gpu", Allowed: []string{"gpu"}},
		Meta:                  map[string]string{"owner": "a"},
	}, nil)
	if err != nil || wm.LastIndex != 7 {
		t.Fatalf("register: %v %+v", err, wm)
	}
	args := env.rpc.last(t, "Namespace.UpsertNamespaces").(*structs.NamespaceUpsertRequest)
	ns := args.Namespaces[0]
	if len(args.Namespaces) != 1 || ns.Name != "team-a" || ns.Description != "A" || ns.Meta["owner"] != "a" ||
		ns.Capabilities.DisabledTaskDrivers[0] != "raw_exec" || ns.Capabilities.EnabledNetworkModes[0] != "bridge" ||
		ns.NodePoolConfiguration.Default != "gpu" || ns.NodePoolConfiguration.Allowed[0] != "gpu" {
		t.Fatalf("upsert args: %+v", ns)
	}
	// The name may come from the path; a body naming another is refused.
	if code, _, _ := env.raw(t, "POST", "/v1/namespace/team-b", `{"Description":"B"}`); code != 200 {
		t.Fatalf("PUT by path: %d", code)
	}
	if n := env.rpc.last(t, "Namespace.UpsertNamespaces").(*structs.NamespaceUpsertRequest).Namespaces[0].Name; n != "team-b" {
		t.Fatalf("path name not used: %q", n)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/namespace/team-b", `{"Name":"team-c"}`); code != 400 || !strings.Contains(body, "does not match") {
		t.Fatalf("mismatched name: %d %q", code, body)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/namespace", `{"Name":`); code != 400 || !strings.Contains(body, "decode") {
		t.Fatalf("bad JSON: %d %q", code, body)
	}
	if code, _, _ := env.raw(t, "GET", "/v1/namespace", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /v1/namespace: %d", code)
	}
	// Validation errors from the server keep their 400.
	env.rpc.fail("Namespace.UpsertNamespaces", structs.NewErrCoded(400, `Invalid namespace "*": invalid name "*".`))
	_, err = env.client.Namespaces().Register(&api.Namespace{Name: "*"}, nil)
	wantStatus(t, err, 400, `invalid name "*".`)

	env.rpc.reply("Namespace.DeleteNamespaces", structs.GenericResponse{WriteMeta: structs.WriteMeta{Index: 9}})
	if wm, err := env.client.Namespaces().Delete("team-a", nil); err != nil || wm.LastIndex != 9 {
		t.Fatalf("delete: %v %+v", err, wm)
	}
	if d := env.rpc.last(t, "Namespace.DeleteNamespaces").(*structs.NamespaceDeleteRequest); len(d.Namespaces) != 1 || d.Namespaces[0] != "team-a" {
		t.Fatalf("delete args: %+v", d)
	}
	env.rpc.fail("Namespace.DeleteNamespaces", structs.NewErrCoded(400, `namespace "team-a" has 1 job(s) in it`))
	_, err = env.client.Namespaces().Delete("team-a", nil)
	wantStatus(t, err, 400, "has 1 job(s)")
}

func TestNodePoolRoutes(t *testing.T) {
	env := newEnv(t, nil)
	on := true
	env.rpc.reply("NodePool.UpsertNodePools", structs.GenericResponse{WriteMeta: structs.WriteMeta{Index: 5}})
	_, err := env.client.NodePools().Register(&api.NodePool{Name: "gpu", Description: "G", NodeIdentityTTL: 2 * time.Hour,
		SchedulerConfiguration: &api.NodePoolSchedulerConfiguration{SchedulerAlgorithm: api.SchedulerAlgorithmSpread, MemoryOversubscriptionEnabled: &on}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := env.rpc.last(t, "NodePool.UpsertNodePools").(*structs.NodePoolUpsertRequest).NodePools[0]
	if p.Name != "gpu" || p.NodeIdentityTTL != 2*time.Hour || p.SchedulerConfiguration.SchedulerAlgorithm != "spread" || !*p.SchedulerConfiguration.MemoryOversubscriptionEnabled {
		t.Fatalf("upsert args: %+v", p)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/node/pools", `{"Description":"x"}`); code != 400 || !strings.Contains(body, "missing node pool name") {
		t.Fatalf("nameless pool: %d %q", code, body)
	}

	env.rpc.reply("NodePool.List", structs.NodePoolListResponse{NodePools: []*structs.NodePool{{Name: "all"}, {Name: "default"}, {Name: "gpu", NodeIdentityTTL: time.Hour}}, QueryMeta: meta(4)})
	pools, qm, err := env.client.NodePools().List(&api.QueryOptions{PerPage: 2})
	if err != nil || len(pools) != 3 || pools[2].NodeIdentityTTL != time.Hour || qm.LastIndex != 4 {
		t.Fatalf("list: %v %+v %+v", err, pools, qm)
	}
	if q := env.rpc.last(t, "NodePool.List").(*structs.GenericRequest); q.PerPage != 2 {
		t.Fatalf("per_page not passed: %+v", q)
	}

	env.rpc.reply("NodePool.GetNodePool", structs.SingleNodePoolResponse{NodePool: &structs.NodePool{Name: "gpu", Description: "G"}, QueryMeta: meta(4)})
	if got, _, err := env.client.NodePools().Info("gpu", nil); err != nil || got.Description != "G" {
		t.Fatalf("info: %v %+v", err, got)
	}
	env.rpc.reply("NodePool.GetNodePool", structs.SingleNodePoolResponse{QueryMeta: meta(4)})
	_, _, err = env.client.NodePools().Info("nope", nil)
	wantStatus(t, err, 404, "node pool not found")

	env.rpc.reply("NodePool.DeleteNodePools", structs.GenericResponse{})
	if _, err := env.client.NodePools().Delete("gpu", nil); err != nil {
		t.Fatal(err)
	}
	if d := env.rpc.last(t, "NodePool.DeleteNodePools").(*structs.NodePoolDeleteRequest); d.Names[0] != "gpu" {
		t.Fatalf("delete args: %+v", d)
	}

	env.rpc.reply("NodePool.ListNodes", structs.NodePoolNodesResponse{Nodes: []*structs.NodeListStub{{ID: "n1", NodePool: "gpu"}}, QueryMeta: meta(6)})
	if nodes, _, err := env.client.NodePools().ListNodes("gpu", nil); err != nil || len(nodes) != 1 || nodes[0].NodePool != "gpu" {
		t.Fatalf("nodes: %v %+v", err, nodes)
	}
	env.rpc.reply("NodePool.ListJobs", structs.NodePoolJobsResponse{Jobs: []*structs.JobListStub{{ID: "train", Namespace: "ml"}}, QueryMeta: meta(6)})
	jobs, _, err := env.client.NodePools().ListJobs("gpu", &api.QueryOptions{Namespace: "*"})
	if err != nil || len(jobs) != 1 || jobs[0].ID != "train" {
		t.Fatalf("jobs: %v %+v", err, jobs)
	}
	if q := env.rpc.last(t, "NodePool.ListJobs").(*structs.NodePoolSpecificRequest); q.Name != "gpu" || q.Namespace != "*" {
		t.Fatalf("jobs args: %+v", q)
	}
	if code, _, _ := env.raw(t, "PUT", "/v1/node/pool/gpu/nodes", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("PUT nodes: %d", code)
	}
	if code, _, _ := env.raw(t, "GET", "/v1/node/pool/gpu/other", ""); code != 404 {
		t.Fatalf("unknown sub-path: %d", code)
	}
	if code, _, _ := env.raw(t, "PATCH", "/v1/node/pools", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("PATCH pools: %d", code)
	}
}
