package httpapi

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/jobspec"
	"github.com/drover-project/drover/internal/structs"
)

// The reschedule policy a job's groups are stored with, for jobs a user
// submits as raw JSON (curl, Terraform) and as HCL (the CLI parses, then
// registers): Nomad's defaults per job type, the job-level block inherited
// by groups, and a partial block completed from the defaults.
func TestJobsRegisterReschedulePolicyDefaults(t *testing.T) {
	service := &structs.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true}
	batch := &structs.ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}
	cases := []struct {
		name      string
		typ       string
		jobBlock  string // HCL inside job {}
		grpBlock  string // HCL inside group {}
		jsonJob   string // JSON fields of the job
		jsonGroup string // JSON fields of the group
		want      *structs.ReschedulePolicy
	}{
		{name: "service default", typ: "service", want: service},
		{name: "batch default", typ: "batch", want: batch},
		{name: "system none", typ: "system", want: nil},
		{name: "sysbatch none", typ: "sysbatch", want: nil},
		{name: "batch partial group block", typ: "batch",
			grpBlock:  `reschedule { attempts = 3 }`,
			jsonGroup: `"ReschedulePolicy": {"Attempts": 3},`,
			want:      &structs.ReschedulePolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}},
		{name: "service job block inherited", typ: "service",
			jobBlock: `reschedule {
  delay          = "10s"
  delay_function = "fibonacci"
  max_delay      = "5m"
}`,
			jsonJob: `"Reschedule": {"Delay": 10000000000, "DelayFunction": "fibonacci", "MaxDelay": 300000000000},`,
			want:    &structs.ReschedulePolicy{Delay: 10 * time.Second, DelayFunction: "fibonacci", MaxDelay: 5 * time.Minute, Unlimited: true}},
		{name: "group overrides job block", typ: "service",
			jobBlock: `reschedule {
  unlimited = false
  attempts  = 5
  interval  = "1h"
}`,
			grpBlock:  `reschedule { delay = "1m" }`,
			jsonJob:   `"Reschedule": {"Unlimited": false, "Attempts": 5, "Interval": 3600000000000},`,
			jsonGroup: `"ReschedulePolicy": {"Delay": 60000000000},`,
			want: &structs.ReschedulePolicy{Attempts: 5, Interval: time.Hour, Delay: time.Minute,
				DelayFunction: "exponential", MaxDelay: time.Hour}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check := func(how string, j *structs.Job) {
				t.Helper()
				got := j.TaskGroups[0].ReschedulePolicy
				if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
					t.Fatalf("%s: stored policy %+v, want %+v", how, got, tc.want)
				}
			}

			env := newEnv(t, nil)
			env.rpc.reply("Job.Register", structs.JobRegisterResponse{EvalID: "e"})
			body := fmt.Sprintf(`{"Job": {"ID": "j", "Type": %q, %s
				"TaskGroups": [{"Name": "g", "Count": 1, %s
					"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`,
				tc.typ, tc.jsonJob, tc.jsonGroup)
			if code, _, out := env.raw(t, "PUT", "/v1/jobs", body); code != 200 {
				t.Fatalf("JSON register: %d %s", code, out)
			}
			check("JSON", env.rpc.last(t, "Job.Register").(*structs.JobRegisterRequest).Job)

			src := fmt.Sprintf(`job "j" {
  type = %q
  %s
  group "g" {
    %s
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`, tc.typ, tc.jobBlock, tc.grpBlock)
			job, err := jobspec.Parse("j.hcl", []byte(src), jobspec.ParseConfig{})
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, src)
			}
			if _, _, err := env.client.Jobs().Register(job, nil); err != nil {
				t.Fatalf("HCL register: %v", err)
			}
			check("HCL", env.rpc.last(t, "Job.Register").(*structs.JobRegisterRequest).Job)
		})
	}
}
