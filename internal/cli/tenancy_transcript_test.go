package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// transcriptFake answers api requests from canned bodies keyed by
// "METHOD /path" (or "METHOD /path?namespace=x" first) and records each
// request with its body. fail answers every request with a 500.
type transcriptFake struct {
	routes map[string]any
	fail   bool
	seen   []string
}

func (f *transcriptFake) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		line := r.Method + " " + r.URL.Path
		if r.URL.RawQuery != "" {
			line += "?" + r.URL.RawQuery
		}
		if len(body) > 0 {
			line += " " + strings.TrimSpace(string(body))
		}
		f.seen = append(f.seen, line)
		if f.fail {
			http.Error(w, "server is unhappy", http.StatusInternalServerError)
			return
		}
		key := r.Method + " " + r.URL.Path
		resp, ok := f.routes[key+"?namespace="+r.URL.Query().Get("namespace")]
		if !ok {
			resp, ok = f.routes[key]
		}
		if !ok {
			http.Error(w, "no route "+key, http.StatusNotFound)
			return
		}
		w.Header().Set("X-Nomad-Index", "10")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func tenancyRoutes() map[string]any {
	ns := &api.Namespace{Name: "team-a", Description: "Team A", Quota: "q1",
		Capabilities:          &api.NamespaceCapabilities{EnabledTaskDrivers: []string{"docker", "exec"}, DisabledNetworkModes: []string{"host"}},
		NodePoolConfiguration: &api.NamespaceNodePoolConfiguration{Default: "gpu", Allowed: []string{"gpu", "default"}},
		Meta:                  map[string]string{"owner": "a", "cost": "7"}, CreateIndex: 3, ModifyIndex: 4}
	pool := &api.NodePool{Name: "gpu", Description: "GPU nodes", Meta: map[string]string{"vendor": "nvidia"},
		SchedulerConfiguration: &api.NodePoolSchedulerConfiguration{SchedulerAlgorithm: "spread", MemoryOversubscriptionEnabled: ptr(true)}}
	regs := []*api.ServiceRegistration{
		{ID: "_nomad-task-8ba85cef-web-api-http", ServiceName: "api", Namespace: "default", NodeID: nodeID, Datacenter: "dc1",
			JobID: "web", AllocID: allocID, Tags: []string{"v1", "blue"}, Address: "10.0.0.5", Port: 23456},
		{ID: "_nomad-task-9ca85cef-web-api-http", ServiceName: "api", Namespace: "default", NodeID: nodeID, Datacenter: "dc1",
			JobID: "web", AllocID: "9ca85cef-0000-4000-8000-000000000009", Address: "10.0.0.6", Port: 23457},
	}
	ap := &api.AutopilotConfiguration{CleanupDeadServers: true, LastContactThreshold: 200 * time.Millisecond, MaxTrailingLogs: 250,
		MinQuorum: 3, ServerStabilizationTime: 10 * time.Second, ModifyIndex: 12}
	return map[string]any{
		"GET /v1/namespaces":          []*api.Namespace{{Name: "team-b", Description: "B"}, {Name: "default", Description: "Default shared namespace"}, ns},
		"GET /v1/namespace/team-a":    ns,
		"GET /v1/namespace/bare":      &api.Namespace{Name: "bare"},
		"PUT /v1/namespace":           nil,
		"DELETE /v1/namespace/team-a": nil,
		"GET /v1/node/pools":          []*api.NodePool{{Name: "all", Description: "Node pool with all nodes in the cluster."}, pool},
		"GET /v1/node/pool/gpu":       pool,
		"GET /v1/node/pool/plain":     &api.NodePool{Name: "plain"},
		"PUT /v1/node/pools":          nil,
		"DELETE /v1/node/pool/gpu":    nil,
		"GET /v1/node/pool/gpu/nodes": []*api.NodeListStub{{ID: nodeID, Name: "node-1", Datacenter: "dc1", NodePool: "gpu",
			Status: "ready", SchedulingEligibility: "eligible", NodeClass: "large", Version: "1.9.0", Drivers: map[string]*api.DriverInfo{}}},
		"GET /v1/node/pool/gpu/jobs": []*api.JobListStub{
			{ID: "web", Namespace: "team-a", Type: "service", Priority: 50, Status: "running", SubmitTime: t0.UnixNano()},
			{ID: "batch", Namespace: "default", Type: "batch", Priority: 70, Status: "dead", Stop: true, SubmitTime: t0.Add(-time.Hour).UnixNano()},
		},
		"GET /v1/services": []*api.ServiceRegistrationListStub{
			{Namespace: "default", Services: []*api.ServiceRegistrationStub{{ServiceName: "api", Tags: []string{"v1", "blue"}}, {ServiceName: "db"}}},
			{Namespace: "team-a", Services: []*api.ServiceRegistrationStub{{ServiceName: "cache", Tags: []string{"redis"}}}},
		},
		"GET /v1/services?namespace=default": []*api.ServiceRegistrationListStub{
			{Namespace: "default", Services: []*api.ServiceRegistrationStub{{ServiceName: "api", Tags: []string{"v1", "blue"}}, {ServiceName: "db"}}},
		},
		"GET /v1/service/api": regs,
		"DELETE /v1/service/api/_nomad-task-8ba85cef-web-api-http": nil,
		"GET /v1/operator/autopilot/configuration":                 ap,
		"PUT /v1/operator/autopilot/configuration":                 true,
		"GET /v1/operator/autopilot/health": &api.OperatorHealthReply{Healthy: true, FailureTolerance: 1, Leader: "s1",
			Voters: []string{"s1", "s2", "s3"}, Servers: []api.ServerHealth{
				{ID: "s1", Name: "server-1.global", Address: "127.0.0.1:4647", SerfStatus: "alive", Version: "1.9.0", Leader: true,
					LastContact: 0, LastTerm: 2, LastIndex: 99, Healthy: true, Voter: true},
				{ID: "s2", Name: "server-2.global", Address: "127.0.0.2:4647", SerfStatus: "failed", LastContact: 3 * time.Second,
					LastTerm: 2, LastIndex: 90, Voter: true},
			}},
		"GET /v1/operator/scheduler/configuration": &api.SchedulerConfigurationResponse{SchedulerConfig: &api.SchedulerConfiguration{
			SchedulerAlgorithm: "binpack", PreemptionConfig: api.PreemptionConfig{SystemSchedulerEnabled: true}, ModifyIndex: 42}},
		"PUT /v1/operator/scheduler/configuration": &api.SchedulerSetConfigurationResponse{Updated: true},
	}
}

// TestTenancyOperatorTranscript pins what the namespace, node pool,
// service and operator autopilot/scheduler verbs print (stdout, stderr,
// exit code) and send, for their text, -json and -t forms, wrong
// arguments, empty answers and server errors. testdata/
// tenancy_operator_transcript.txt is the transcript (UPDATE_GOLDEN=1
// rewrites it; review the diff).
func TestTenancyOperatorTranscript(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nsHCL := write("ns.hcl", `name = "fromhcl"
description = "From HCL"
capabilities {
  enabled_task_drivers = ["docker"]
  disabled_network_modes = ["host"]
}
node_pool_config {
  default = "gpu"
  denied  = ["default"]
}
meta {
  owner = "a"
}
`)
	nsJSON := write("ns.json", `{"Name":"json","Description":"From JSON","Meta":{"k":"v"}}`)
	nsBad := write("bad.hcl", "name = \n")
	nsBadMeta := write("badmeta.hcl", "name = \"x\"\nmeta {\n  n = 1\n}\n")
	poolHCL := write("pool.hcl", `node_pool "gpu" {
  description = "GPU nodes"
  meta {
    vendor = "nvidia"
  }
  scheduler_config {
    scheduler_algorithm             = "spread"
    memory_oversubscription_enabled = true
  }
}
`)
	poolJSON := write("pool.json", `{"Name":"gpu","Description":"From JSON"}`)
	poolTwo := write("two.hcl", "node_pool \"a\" {}\nnode_pool \"b\" {}\n")

	cases := [][]string{
		{"namespace", "list"},
		{"namespace", "list", "-json"},
		{"namespace", "list", "-t", "{{range .}}{{.Name}};{{end}}"},
		{"namespace", "list", "-json", "-t", "x"},
		{"namespace", "list", "extra"},
		{"namespace", "list", "-bogus"},
		{"namespace", "status", "team-a"},
		{"namespace", "status", "bare"},
		{"namespace", "status", "-json", "team-a"},
		{"namespace", "status", "-t", "{{.Name}} {{.Quota}}", "team-a"},
		{"namespace", "status", "-t", "{{.Nope}}", "team-a"},
		{"namespace", "status", "-t", "{{", "team-a"},
		{"namespace", "status"},
		{"namespace", "status", "missing"},
		{"namespace", "apply", "-description", "new one", "-quota", "q2", "newns"},
		{"namespace", "apply", "-description", "changed", "team-a"},
		{"namespace", "apply", nsHCL},
		{"namespace", "apply", "-json", nsJSON},
		{"namespace", "apply", "-description", "override", nsJSON, "-json"},
		{"namespace", "apply", nsBad},
		{"namespace", "apply", nsBadMeta},
		{"namespace", "apply", "-json", nsHCL},
		{"namespace", "apply"},
		{"namespace", "apply", "a", "b"},
		{"namespace", "delete", "team-a"},
		{"namespace", "delete"},
		{"namespace", "delete", "missing"},
		{"node", "pool", "list"},
		{"node", "pool", "list", "-filter", `Name == "gpu"`},
		{"node", "pool", "list", "-json"},
		{"node", "pool", "list", "-t", "{{range .}}{{.Name}}|{{end}}"},
		{"node", "pool", "list", "x"},
		{"node", "pool", "info", "gpu"},
		{"node", "pool", "info", "plain"},
		{"node", "pool", "info", "-json", "gpu"},
		{"node", "pool", "info", "-t", "{{.Description}}", "gpu"},
		{"node", "pool", "info"},
		{"node", "pool", "info", "missing"},
		{"node", "pool", "apply", poolHCL},
		{"node", "pool", "apply", "-json", poolJSON},
		{"node", "pool", "apply", poolTwo},
		{"node", "pool", "apply", "testdata/does-not-exist.hcl"},
		{"node", "pool", "apply"},
		{"node", "pool", "delete", "gpu"},
		{"node", "pool", "delete", "missing"},
		{"node", "pool", "delete"},
		{"node", "pool", "nodes", "gpu"},
		{"node", "pool", "nodes", "-verbose", "gpu"},
		{"node", "pool", "nodes", "-json", "gpu"},
		{"node", "pool", "nodes", "-filter", `Status == "ready"`, "gpu"},
		{"node", "pool", "nodes", "missing"},
		{"node", "pool", "nodes"},
		{"node", "pool", "jobs", "gpu"},
		{"node", "pool", "jobs", "-filter", `Type == "batch"`, "-t", "{{len .}}", "gpu"},
		{"node", "pool", "jobs", "missing"},
		{"node", "pool", "jobs"},
		{"service", "list"},
		{"service", "list", "-namespace=default"},
		{"service", "list", "-json"},
		{"service", "list", "-t", "{{range .}}{{.Namespace}} {{end}}"},
		{"service", "list", "x"},
		{"service", "info", "api"},
		{"service", "info", "-verbose", "api"},
		{"service", "info", "-json", "api"},
		{"service", "info", "-filter", `Port == 23456`, "api"},
		{"service", "info", "missing"},
		{"service", "info"},
		{"service", "delete", "api", "_nomad-task-8ba85cef-web-api-http"},
		{"service", "delete", "api"},
		{"service", "delete", "api", "gone"},
		{"operator", "autopilot", "get-config"},
		{"operator", "autopilot", "get-config", "-json"},
		{"operator", "autopilot", "get-config", "-t", "{{.MinQuorum}}"},
		{"operator", "autopilot", "get-config", "x"},
		{"operator", "autopilot", "set-config", "-cleanup-dead-servers=false", "-max-trailing-logs=30", "-min-quorum=5",
			"-last-contact-threshold=1s", "-server-stabilization-time=30s", "-enable-redundancy-zones"},
		{"operator", "autopilot", "set-config", "-last-contact-threshold=soon"},
		{"operator", "autopilot", "set-config", "-max-trailing-logs=-1"},
		{"operator", "autopilot", "set-config", "-min-quorum=x"},
		{"operator", "autopilot", "set-config", "-cleanup-dead-servers=maybe"},
		{"operator", "autopilot", "set-config", "x"},
		{"operator", "autopilot", "health"},
		{"operator", "autopilot", "health", "-json"},
		{"operator", "autopilot", "health", "-t", "x"},
		{"operator", "autopilot", "health", "x"},
		{"operator", "scheduler", "get-config"},
		{"operator", "scheduler", "get-config", "-t", "{{.SchedulerAlgorithm}}"},
		{"operator", "scheduler", "get-config", "-json", "-t", "x"},
		{"operator", "scheduler", "get-config", "x"},
		{"operator", "scheduler", "set-config", "-scheduler-algorithm=spread", "-preempt-batch-scheduler"},
		{"operator", "scheduler", "set-config", "-check-index=42", "-reject-job-registration=true"},
		{"operator", "scheduler", "set-config", "-bogus"},
		{"operator", "scheduler", "set-config", "x"},
	}
	var b strings.Builder
	for _, pass := range []struct {
		name   string
		routes func() map[string]any
		fail   bool
		only   func(args []string) bool
	}{
		{name: "populated", routes: tenancyRoutes},
		{name: "empty lists", routes: func() map[string]any {
			return map[string]any{"GET /v1/namespaces": []any{}, "GET /v1/node/pools": []any{}, "GET /v1/node/pool/gpu/nodes": []any{},
				"GET /v1/node/pool/gpu/jobs": []any{}, "GET /v1/services": []any{}, "GET /v1/service/api": []any{},
				"GET /v1/operator/autopilot/configuration": &api.AutopilotConfiguration{},
				"PUT /v1/operator/autopilot/configuration": false,
				"GET /v1/operator/autopilot/health":        &api.OperatorHealthReply{},
				"GET /v1/operator/scheduler/configuration": &api.SchedulerConfigurationResponse{},
				"PUT /v1/operator/scheduler/configuration": &api.SchedulerSetConfigurationResponse{}}
		}},
		{name: "server errors", routes: func() map[string]any { return nil }, fail: true},
	} {
		fmt.Fprintf(&b, "### %s\n\n", pass.name)
		for _, args := range cases {
			f := &transcriptFake{routes: pass.routes(), fail: pass.fail}
			out, errb, code := run(t, f.server(t), args...)
			fmt.Fprintf(&b, "$ %s\n", strings.ReplaceAll(strings.Join(args, " "), dir, "$DIR"))
			fmt.Fprintf(&b, "exit %d\n", code)
			for _, s := range f.seen {
				fmt.Fprintf(&b, "> %s\n", s)
			}
			if out != "" {
				fmt.Fprintf(&b, "--- stdout\n%s", out)
			}
			if errb != "" {
				fmt.Fprintf(&b, "--- stderr\n%s", strings.ReplaceAll(errb, dir, "$DIR"))
			}
			b.WriteString("\n")
		}
	}
	golden(t, "tenancy_operator_transcript.txt", b.String())
}

// The help of each verb is pinned too.
func TestTenancyOperatorHelp(t *testing.T) {
	var b strings.Builder
	for _, verb := range []string{"namespace list", "namespace status", "namespace apply", "namespace delete",
		"node pool list", "node pool info", "node pool apply", "node pool delete", "node pool nodes", "node pool jobs",
		"service list", "service info", "service delete", "operator autopilot get-config", "operator autopilot set-config",
		"operator autopilot health", "operator scheduler get-config", "operator scheduler set-config"} {
		out, errb, code := run(t, nil, append(strings.Fields(verb), "-help")...)
		fmt.Fprintf(&b, "$ %s -help\nexit %d\n%s%s\n", verb, code, out, errb)
	}
	golden(t, "tenancy_operator_help.txt", b.String())
}
