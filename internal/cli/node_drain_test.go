package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// drainFake records drain and eligibility requests.
type drainFake struct {
	drain *api.NodeUpdateDrainRequest
	elig  *api.NodeUpdateEligibilityRequest
}

func (f *drainFake) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "12")
		switch r.URL.Path {
		case "/v1/node/" + nodeID + "/drain":
			f.drain = &api.NodeUpdateDrainRequest{}
			json.NewDecoder(r.Body).Decode(f.drain)
			json.NewEncoder(w).Encode(&api.NodeDrainUpdateResponse{NodeModifyIndex: 12})
		case "/v1/node/" + nodeID + "/eligibility":
			f.elig = &api.NodeUpdateEligibilityRequest{}
			json.NewDecoder(r.Body).Decode(f.elig)
			json.NewEncoder(w).Encode(&api.NodeEligibilityUpdateResponse{NodeModifyIndex: 12})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestNodeDrainEnableSendsTheSpec(t *testing.T) {
	f := &drainFake{}
	out, errb, code := run(t, f.server(t), "node", "drain", "-enable", "-deadline", "30s", "-ignore-system", "-m", "kernel upgrade",
		"-detach", "-yes", nodeID)
	if code != 0 || !strings.Contains(out, `Node "`+nodeID+`" drain strategy set`) {
		t.Fatalf("code %d out %q err %q", code, out, errb)
	}
	d := f.drain
	if d == nil || d.DrainSpec == nil || d.DrainSpec.Deadline != 30*time.Second || !d.DrainSpec.IgnoreSystemJobs ||
		d.Meta["message"] != "kernel upgrade" || d.MarkEligible {
		t.Fatalf("drain request %+v", d)
	}
	if _, _, code := run(t, f.server(t), "node", "drain", "-enable", "-force", "-detach", nodeID); code != 0 || f.drain.DrainSpec.Deadline >= 0 {
		t.Fatalf("-force: code %d spec %+v", code, f.drain.DrainSpec)
	}
	if _, _, code := run(t, f.server(t), "node", "drain", "-enable", "-no-deadline", "-detach", nodeID); code != 0 || f.drain.DrainSpec.Deadline != 0 {
		t.Fatalf("-no-deadline: code %d spec %+v", code, f.drain.DrainSpec)
	}
}

func TestNodeDrainDisable(t *testing.T) {
	f := &drainFake{}
	out, _, code := run(t, f.server(t), "node", "drain", "-disable", nodeID)
	if code != 0 || !strings.Contains(out, "drain strategy unset") || f.drain.DrainSpec != nil || !f.drain.MarkEligible {
		t.Fatalf("code %d out %q request %+v", code, out, f.drain)
	}
	if _, _, code := run(t, f.server(t), "node", "drain", "-disable", "-keep-ineligible", nodeID); code != 0 || f.drain.MarkEligible {
		t.Fatalf("-keep-ineligible: code %d request %+v", code, f.drain)
	}
}

func TestNodeDrainRefusesContradictions(t *testing.T) {
	for _, args := range [][]string{
		{"-enable", "-disable", nodeID},
		{nodeID},
		{"-enable", "-force", "-no-deadline", nodeID},
		{"-disable", "-force", nodeID},
		{"-monitor", "-enable", nodeID},
		{"-enable"},
	} {
		f := &drainFake{}
		if _, errb, code := run(t, f.server(t), append([]string{"node", "drain"}, args...)...); code != 1 || errb == "" || f.drain != nil {
			t.Fatalf("%v: code %d err %q sent %v", args, code, errb, f.drain)
		}
	}
}

func TestNodeEligibility(t *testing.T) {
	f := &drainFake{}
	out, _, code := run(t, f.server(t), "node", "eligibility", "-disable", nodeID)
	if code != 0 || !strings.Contains(out, "ineligible for scheduling") || f.elig.Eligibility != "ineligible" {
		t.Fatalf("code %d out %q request %+v", code, out, f.elig)
	}
	if _, errb, code := run(t, f.server(t), "node", "eligibility", nodeID); code != 1 || !strings.Contains(errb, "-enable or -disable") {
		t.Fatalf("neither flag: code %d %q", code, errb)
	}
}
