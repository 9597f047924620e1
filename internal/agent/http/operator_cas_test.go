package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// A configuration write with ?cas= present but empty (a script's
// "?cas=$IDX" with IDX unset) or not a number is refused 400 naming cas and
// reaches no server, as Nomad refuses it; an empty cas was taken as no cas
// and replaced the scheduler or autopilot configuration unconditionally,
// over whatever another operator had just written.
func TestConfigWriteWithEmptyCASIsRefused(t *testing.T) {
	env := newEnv(t, nil)
	for _, tc := range []struct{ path, rpc, body string }{
		{"/v1/operator/scheduler/configuration", "Operator.SchedulerSetConfiguration", `{"SchedulerAlgorithm":"spread"}`},
		{"/v1/operator/autopilot/configuration", "Operator.AutopilotSetConfiguration", `{"CleanupDeadServers":true}`},
	} {
		for _, q := range []string{"?cas=", "?cas", "?cas=abc", "?cas=-1"} {
			code, _, body := env.raw(t, http.MethodPut, tc.path+q, tc.body)
			if code != http.StatusBadRequest || !strings.Contains(body, "cas") {
				t.Errorf("PUT %s%s: %d %q, want 400 naming cas", tc.path, q, code, body)
			}
		}
		env.rpc.mu.Lock()
		for _, c := range env.rpc.calls {
			if c.Method == tc.rpc {
				t.Errorf("a refused write reached %s: %+v", tc.rpc, c.Args)
			}
		}
		env.rpc.mu.Unlock()

		// A real index is a check-and-set at that index.
		if code, _, body := env.raw(t, http.MethodPut, tc.path+"?cas=7", tc.body); code != http.StatusOK {
			t.Fatalf("PUT %s?cas=7: %d %s", tc.path, code, body)
		}
		switch args := env.rpc.last(t, tc.rpc).(type) {
		case *structs.SchedulerSetConfigRequest:
			if !args.CAS || args.Config.ModifyIndex != 7 {
				t.Errorf("scheduler cas=7 sent CAS %v index %d", args.CAS, args.Config.ModifyIndex)
			}
		case *structs.AutopilotSetConfigRequest:
			if !args.CAS || args.Config.ModifyIndex != 7 {
				t.Errorf("autopilot cas=7 sent CAS %v index %d", args.CAS, args.Config.ModifyIndex)
			}
		}
	}
}
