package agent

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Over a node session a server reaches only the routes a node answers for
// others: its client API and its log monitor, never jobs, ACLs or agent
// control.
func TestRelayedRoutesOnlyClientAPI(t *testing.T) {
	h := relayedRoutes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }))
	for path, want := range map[string]int{
		"/v1/client/fs/logs/a1":  299,
		"/v1/client/stats":       299,
		"/v1/agent/monitor":      299,
		"/v1/jobs":               404,
		"/v1/agent/self":         404,
		"/v1/client":             404,
		"/v1/agent/monitor/x":    404,
		"/debug/pprof/heap":      404,
		"/v1/acl/token/self":     404,
		"/v1/operator/raft/peer": 404,
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
		}
	}
}
