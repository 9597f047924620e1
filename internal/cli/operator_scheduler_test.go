package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// schedFake serves the scheduler configuration and records what set-config
// writes.
type schedFake struct {
	cfg     api.SchedulerConfiguration
	put     *api.SchedulerConfiguration
	query   string
	updated bool
}

func (f *schedFake) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/operator/scheduler/configuration" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Nomad-Index", "42")
		if r.Method == http.MethodGet {
			json.NewEncoder(w).Encode(&api.SchedulerConfigurationResponse{SchedulerConfig: &f.cfg})
			return
		}
		f.put, f.query = &api.SchedulerConfiguration{}, r.URL.RawQuery
		json.NewDecoder(r.Body).Decode(f.put)
		json.NewEncoder(w).Encode(&api.SchedulerSetConfigurationResponse{Updated: f.updated})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestOperatorSchedulerGetConfig(t *testing.T) {
	f := &schedFake{cfg: api.SchedulerConfiguration{SchedulerAlgorithm: "spread", MemoryOversubscriptionEnabled: true,
		PreemptionConfig: api.PreemptionConfig{SystemSchedulerEnabled: true, BatchSchedulerEnabled: true}, ModifyIndex: 42}}
	out, errb, code := run(t, f.server(t), "operator", "scheduler", "get-config")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "operator_scheduler_get_config.txt", out)

	out, _, code = run(t, f.server(t), "operator", "scheduler", "get-config", "-json")
	var got api.SchedulerConfiguration
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.SchedulerAlgorithm != "spread" || got.ModifyIndex != 42 {
		t.Fatalf("-json (%d): %s", code, out)
	}
}

// set-config changes only the settings given, uses CAS with -check-index,
// and says so when the CAS write lost.
func TestOperatorSchedulerSetConfig(t *testing.T) {
	f := &schedFake{cfg: api.SchedulerConfiguration{SchedulerAlgorithm: "binpack",
		PreemptionConfig: api.PreemptionConfig{SystemSchedulerEnabled: true}, ModifyIndex: 42}, updated: true}
	srv := f.server(t)
	out, errb, code := run(t, srv, "operator", "scheduler", "set-config", "-scheduler-algorithm=spread", "-pause-eval-broker", "-preempt-system-scheduler=false")
	if code != 0 || !strings.Contains(out, "Scheduler configuration updated!") {
		t.Fatalf("code %d: %s %s", code, out, errb)
	}
	want := api.SchedulerConfiguration{SchedulerAlgorithm: "spread", PauseEvalBroker: true, ModifyIndex: 42}
	if f.put == nil || *f.put != want || f.query != "" {
		t.Fatalf("wrote %+v ?%s, want %+v", f.put, f.query, want)
	}

	f.updated = false
	_, errb, code = run(t, srv, "operator", "scheduler", "set-config", "-check-index=7", "-memory-oversubscription=true")
	if code != 1 || !strings.Contains(errb, "could not be atomically updated") || f.query != "cas=7" || !f.put.MemoryOversubscriptionEnabled {
		t.Fatalf("CAS: code %d %q query %q put %+v", code, errb, f.query, f.put)
	}

	for _, bad := range [][]string{{"-scheduler-algorithm=random"}, {"-pause-eval-broker=maybe"}, {"-check-index=x"}} {
		if _, errb, code := run(t, srv, append([]string{"operator", "scheduler", "set-config"}, bad...)...); code != 1 || errb == "" {
			t.Errorf("%v: code %d %q", bad, code, errb)
		}
	}
}
