package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// fakeWorkers is a worker pool that refuses a negative count.
type fakeWorkers struct {
	num     int
	enabled []string
}

func (f *fakeWorkers) WorkerConfig() api.AgentSchedulerWorkerConfigResponse {
	return api.AgentSchedulerWorkerConfigResponse{ServerID: "srv-1", NumSchedulers: f.num, EnabledSchedulers: f.enabled}
}

func (f *fakeWorkers) SetWorkerConfig(num int, enabled []string) (api.AgentSchedulerWorkerConfigResponse, error) {
	if num < 0 {
		return api.AgentSchedulerWorkerConfigResponse{}, structs.NewErrCoded(400, "num_schedulers must be between 0 and 1024, got %d", num)
	}
	f.num, f.enabled = num, enabled
	return f.WorkerConfig(), nil
}

func (f *fakeWorkers) WorkersInfo() api.AgentSchedulerWorkersInfo {
	out := api.AgentSchedulerWorkersInfo{ServerID: "srv-1"}
	for i := 0; i < f.num; i++ {
		out.Schedulers = append(out.Schedulers, api.AgentSchedulerWorkerInfo{ID: "w", EnabledSchedulers: f.enabled,
			Started: "2026-01-01T00:00:00Z", Status: "Started", WorkloadStatus: "WaitingToDequeue"})
	}
	return out
}

// The scheduler worker endpoints answer in Nomad's snake_case shapes
// through the official client, apply a PUT, and refuse a bad one with
// Nomad's bare "Invalid request" (the reason in X-Drover-Error-Detail).
func TestAgentSchedulers(t *testing.T) {
	pool := &fakeWorkers{num: 1, enabled: []string{"service", "_core"}}
	env := newEnv(t, func(c *Config) { c.Schedulers = pool })
	a := env.client.Agent()

	cfg, err := a.GetSchedulerWorkerConfig(nil)
	if err != nil || cfg.NumSchedulers != 1 || strings.Join(cfg.EnabledSchedulers, ",") != "service,_core" {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	set, err := a.SetSchedulerWorkerConfig(api.SchedulerWorkerPoolArgs{NumSchedulers: 2, EnabledSchedulers: []string{"batch", "_core"}}, nil)
	if err != nil || set.NumSchedulers != 2 || pool.num != 2 || strings.Join(pool.enabled, ",") != "batch,_core" {
		t.Fatalf("set: %+v, %v; pool %+v", set, err, pool)
	}
	info, err := a.GetSchedulerWorkersInfo(nil)
	if err != nil || info.ServerID != "srv-1" || len(info.Schedulers) != 2 || info.Schedulers[0].WorkloadStatus != "WaitingToDequeue" {
		t.Fatalf("info %+v, %v", info, err)
	}

	// The wire keys are Nomad's, and an empty pool is [] (not null).
	pool.num = 0
	code, _, body := env.raw(t, "GET", "/v1/agent/schedulers", "")
	if code != 200 || !strings.Contains(body, `"server_id":"srv-1"`) || !strings.Contains(body, `"schedulers":[]`) {
		t.Fatalf("GET /v1/agent/schedulers: %d %s", code, body)
	}
	// The GET answer, sent back as it is, is accepted (server_id ignored).
	_, _, body = env.raw(t, "GET", "/v1/agent/schedulers/config", "")
	if code, _, back := env.raw(t, "PUT", "/v1/agent/schedulers/config", body); code != 200 {
		t.Fatalf("round trip of %s: %d %s", body, code, back)
	}

	_, err = a.SetSchedulerWorkerConfig(api.SchedulerWorkerPoolArgs{NumSchedulers: -1, EnabledSchedulers: []string{"_core"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "400 (Invalid request)") {
		t.Fatalf("negative count: %v", err)
	}
	for _, tc := range []struct{ body, detail string }{
		{`{"num_schedulers":-1,"enabled_schedulers":["_core"]}`, "num_schedulers must be between 0 and 1024, got -1"},
		{`{"enabled_schedulers":["service"]}`, "num_schedulers is required"},
	} {
		code, hdr, body := env.raw(t, "PUT", "/v1/agent/schedulers/config", tc.body)
		if code != 400 || body != "Invalid request" || !strings.Contains(hdr.Get("X-Drover-Error-Detail"), tc.detail) {
			t.Errorf("PUT %s: %d %q, detail %q; want 400 \"Invalid request\" with %q", tc.body, code, body, hdr.Get("X-Drover-Error-Detail"), tc.detail)
		}
	}
	if code, _, body := env.raw(t, "PUT", "/v1/agent/schedulers/config", `{"num_schedulers":"two"}`); code != 400 || !strings.HasPrefix(body, "Invalid request: ") {
		t.Errorf("malformed body: %d %q", code, body)
	}
	if pool.num != 0 {
		t.Fatalf("a refused request changed the pool to %d", pool.num)
	}
	if code, _, _ := env.raw(t, "DELETE", "/v1/agent/schedulers/config", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE config: %d", code)
	}
	if code, _, _ := env.raw(t, "PUT", "/v1/agent/schedulers", "{}"); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT info: %d", code)
	}
}

// On an agent without a server both endpoints answer Nomad's 400.
func TestAgentSchedulers_ClientOnly(t *testing.T) {
	env := newEnv(t, nil)
	for _, p := range []string{"/v1/agent/schedulers", "/v1/agent/schedulers/config"} {
		if code, _, body := env.raw(t, "GET", p, ""); code != 400 || body != "Server only endpoint" {
			t.Errorf("GET %s: %d %q", p, code, body)
		}
	}
}
