package server

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// Register, Plan and Validate agree on a job using parts Drover does not act
// on: refused parts fail Register and Plan with a 400 and are validation
// errors of Validate; ignored parts come back in every reply's Warnings.
func TestJobEndpointsRefuseOrWarnUnsupported(t *testing.T) {
	s := testServer(t, nil)

	refused := testJob("tmpl", 1)
	refused.TaskGroups[0].Tasks[0].Templates = []*structs.Template{{DestPath: ptrTo("local/app.conf"), EmbeddedTmpl: ptrTo(`{{ key "app/x" }}`)}}
	const wantRefused = `Task group "web", task "t": template "local/app.conf" function "key" (Consul) is not supported by Drover yet`
	for _, method := range []string{"Job.Register", "Job.Plan"} {
		var err error
		if method == "Job.Register" {
			err = s.RPC(method, &structs.JobRegisterRequest{Job: refused.Copy()}, &structs.JobRegisterResponse{})
		} else {
			err = s.RPC(method, &structs.JobPlanRequest{Job: refused.Copy()}, &structs.JobPlanResponse{})
		}
		if err == nil {
			t.Errorf("%s: accepted a job with a template", method)
		} else if code, msg := structs.ErrorCode(err); code != 400 || !strings.Contains(msg, wantRefused) {
			t.Errorf("%s: got %d %q, want 400 naming the template", method, code, msg)
		}
	}
	if j, _ := s.State().JobByID(nil, "default", "tmpl"); j != nil {
		t.Fatal("a refused job was stored")
	}
	var vr structs.JobValidateResponse
	if err := s.RPC("Job.Validate", &structs.JobValidateRequest{Job: refused.Copy()}, &vr); err != nil {
		t.Fatal(err)
	}
	if len(vr.ValidationErrors) != 1 || !strings.HasPrefix(vr.ValidationErrors[0], wantRefused) || !strings.Contains(vr.Error, wantRefused) {
		t.Errorf("validate: errors %q, error %q", vr.ValidationErrors, vr.Error)
	}

	warned := testJob("svc", 1)
	warned.TaskGroups[0].Services = []*structs.Service{{Name: "api", Provider: "consul"}} // Drover has no Consul integration
	warned.TaskGroups[0].Networks = []*structs.NetworkResource{{MBits: 100}}              // bandwidth is not accounted
	const wantWarnings = "2 warnings:\n\n* Task group \"web\": network[0] mbits is accepted but not acted on by Drover yet"
	var rr structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: warned.Copy()}, &rr); err != nil {
		t.Fatal(err)
	}
	var pr structs.JobPlanResponse
	if err := s.RPC("Job.Plan", &structs.JobPlanRequest{Job: warned.Copy()}, &pr); err != nil {
		t.Fatal(err)
	}
	vr = structs.JobValidateResponse{}
	if err := s.RPC("Job.Validate", &structs.JobValidateRequest{Job: warned.Copy()}, &vr); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]string{"register": rr.Warnings, "plan": pr.Warnings, "validate": vr.Warnings} {
		if !strings.HasPrefix(w, wantWarnings) || !strings.Contains(w, "\n* Task group \"web\": service \"api\" is accepted") {
			t.Errorf("%s warnings = %q", name, w)
		}
	}
	if len(vr.ValidationErrors) != 0 {
		t.Errorf("validate of an accepted job has errors %q", vr.ValidationErrors)
	}
	if j, _ := s.State().JobByID(nil, "default", "svc"); j == nil {
		t.Fatal("the warned job was not registered")
	}

	// Registering it again unchanged (no new version) still warns.
	rr = structs.JobRegisterResponse{}
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: warned.Copy()}, &rr); err != nil || !strings.HasPrefix(rr.Warnings, wantWarnings) {
		t.Errorf("unchanged re-register: err %v, warnings %q", err, rr.Warnings)
	}
}

func ptrTo[T any](v T) *T { return &v }
