package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func TestJobRestartRoutes(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Job.Restart", structs.JobRestartResponse{Restart: &structs.JobRestart{ID: "r1", JobID: "web", Status: "running"}})
	env.rpc.reply("Job.GetRestart", structs.JobRestartResponse{Restart: &structs.JobRestart{ID: "r1", JobID: "web", Status: "complete"},
		QueryMeta: structs.QueryMeta{Index: 9}})

	code, _, body := env.raw(t, "PUT", "/v1/job/web/restart?namespace=prod",
		`{"BatchSize":"25%","BatchWait":"ask","Group":"g","Task":"t","OnError":"ask"}`)
	if code != 200 || !strings.Contains(body, `"ID":"r1"`) {
		t.Fatalf("start: %d %s", code, body)
	}
	args := env.rpc.last(t, "Job.Restart").(*structs.JobRestartStartRequest)
	want := structs.JobRestartSpec{BatchSizePercent: 25, BatchWaitAsk: true, Group: "g", Task: "t", OnError: "ask"}
	if args.JobID != "web" || args.Namespace != "prod" || args.Spec != want {
		t.Fatalf("args %+v", args)
	}
	env.raw(t, "POST", "/v1/job/web/restart", `{"BatchSize":2,"BatchWait":1000000000,"Reschedule":true}`)
	args = env.rpc.last(t, "Job.Restart").(*structs.JobRestartStartRequest)
	if args.Spec.BatchSize != 2 || args.Spec.BatchWait != time.Second || !args.Spec.Reschedule {
		t.Fatalf("numeric body: %+v", args.Spec)
	}
	env.raw(t, "PUT", "/v1/job/web/restart", ``)
	if args = env.rpc.last(t, "Job.Restart").(*structs.JobRestartStartRequest); args.Spec != (structs.JobRestartSpec{}) {
		t.Fatalf("empty body: %+v", args.Spec)
	}

	for _, tc := range []struct{ body, want string }{
		{`{"BatchSize":0}`, "BatchSize"},
		{`{"BatchSize":"150%"}`, "BatchSize"},
		{`{"BatchWait":"soon"}`, "BatchWait"},
		{`{"BatchWait":"-1s"}`, "BatchWait"},
		{`{"AllTasks":true}`, "AllTasks"},
		{`{"Task":"t","Reschedule":true}`, "Reschedule"},
		{`{"OnError":"retry"}`, "OnError"},
		{`{"BatchSize":[1]}`, "BatchSize"},
	} {
		code, _, body := env.raw(t, "PUT", "/v1/job/web/restart", tc.body)
		if code != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s", tc.body, code, body)
		}
	}

	code, hdr, body := env.raw(t, "GET", "/v1/job/web/restart", "")
	if code != 200 || !strings.Contains(body, `"Status":"complete"`) || hdr.Get("X-Nomad-Index") != "9" {
		t.Fatalf("get: %d %s %v", code, body, hdr)
	}
	env.raw(t, "DELETE", "/v1/job/web/restart", "")
	if c := env.rpc.last(t, "Job.RestartControl").(*structs.JobRestartControlRequest); c.Resume || c.JobID != "web" {
		t.Fatalf("cancel: %+v", c)
	}
	env.raw(t, "PUT", "/v1/job/web/restart/resume", "")
	if c := env.rpc.last(t, "Job.RestartControl").(*structs.JobRestartControlRequest); !c.Resume {
		t.Fatalf("resume: %+v", c)
	}
	if code, _, _ := env.raw(t, "GET", "/v1/job/web/restart/resume", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET resume: %d", code)
	}
	if code, _, _ := env.raw(t, "GET", "/v1/job/web/restart/other", ""); code != http.StatusNotFound {
		t.Fatalf("unknown subpath: %d", code)
	}

	none := newEnv(t, nil)
	if code, _, body := none.raw(t, "GET", "/v1/job/web/restart", ""); code != 404 || !strings.Contains(body, "no restart") {
		t.Fatalf("no restart: %d %s", code, body)
	}
}
