package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// An unhealthy cluster is answered 429 with the health report (as Nomad
// answers it): `operator autopilot health` shows that report, the failed
// server among the others, rather than only an error carrying the JSON:
// the command was useless exactly when the operator needed it.
func TestOperatorAutopilotHealthShowsAnUnhealthyCluster(t *testing.T) {
	reply := &api.OperatorHealthReply{Healthy: false, FailureTolerance: 0, Leader: "id-1", Voters: []string{"id-1", "id-2", "id-3"},
		Servers: []api.ServerHealth{
			{ID: "id-1", Name: "s1.global", Address: "10.0.0.1:4647", SerfStatus: "alive", Voter: true, Leader: true, Healthy: true, LastTerm: 6, LastIndex: 140},
			{ID: "id-3", Name: "s3.global", Address: "10.0.0.3:4647", SerfStatus: "failed", Voter: true, Healthy: false, LastTerm: 6, LastIndex: 139},
		}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/operator/autopilot/health" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		json.NewEncoder(w).Encode(reply)
	}))
	t.Cleanup(srv.Close)

	out, errb, code := run(t, srv, "operator", "autopilot", "health")
	if code != 0 || errb != "" {
		t.Fatalf("code %d, stderr %q", code, errb)
	}
	for _, want := range []string{"Healthy", "false", "s3.global", "failed", "10.0.0.3:4647"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = run(t, srv, "operator", "autopilot", "health", "-json")
	var got api.OperatorHealthReply
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Healthy || len(got.Servers) != 2 {
		t.Fatalf("-json: code %d:\n%s", code, out)
	}

	// Any other failure is still an error.
	srv.Close()
	if _, errb, code := run(t, srv, "operator", "autopilot", "health"); code != 1 || !strings.Contains(errb, "Error querying Autopilot health") {
		t.Fatalf("server gone: code %d, %q", code, errb)
	}
}
