package structs

import (
	"strings"
	"testing"
	"time"
)

func TestPeriodicValidation(t *testing.T) {
	base := func(mut func(j *Job)) *Job {
		j := &Job{ID: "p", Name: "p", Namespace: "default", Type: JobTypeBatch, Priority: 50, Datacenters: []string{"dc1"},
			TaskGroups: []*TaskGroup{{Name: "g", Count: 1, Tasks: []*Task{{Name: "t", Driver: "raw_exec"}}}}}
		j.Canonicalize()
		mut(j)
		return j
	}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name string
		mut  func(j *Job)
		want string
	}{
		{"valid cron", func(j *Job) { j.Periodic = &PeriodicConfig{Spec: s("*/5 * * * *"), TimeZone: s("Europe/Paris")} }, ""},
		{"bad cron", func(j *Job) { j.Periodic = &PeriodicConfig{Spec: s("every minute")} }, "invalid cron spec"},
		{"no spec", func(j *Job) { j.Periodic = &PeriodicConfig{} }, "must specify a spec"},
		{"bad zone", func(j *Job) { j.Periodic = &PeriodicConfig{Spec: s("* * * * *"), TimeZone: s("Mars/Olympus")} }, "invalid time zone"},
		{"service periodic", func(j *Job) { j.Type = JobTypeService; j.Periodic = &PeriodicConfig{Spec: s("* * * * *")} }, "periodic can only be used"},
		{"bad payload mode", func(j *Job) { j.ParameterizedJob = &ParameterizedJobConfig{Payload: "sometimes"} }, "unknown payload requirement"},
		{"dispatch_payload outside parameterized", func(j *Job) {
			j.TaskGroups[0].Tasks[0].DispatchPayload = &DispatchPayloadConfig{File: "in"}
		}, "only allowed in parameterized jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := base(tc.mut).Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDerivedIDs(t *testing.T) {
	at := time.Unix(1700000000, 0)
	if id := PeriodicChildID("a/b", at); id != "a/b/periodic-1700000000" {
		t.Fatalf("periodic child ID %q", id)
	}
	if got, ok := PeriodicLaunchTime("a/b/periodic-1700000000"); !ok || !got.Equal(at) {
		t.Fatalf("launch time %v %v", got, ok)
	}
	if !IsPeriodicChildOf("a/b/periodic-1700000000", "a/b") || IsPeriodicChildOf("a/b/dispatch-1-x", "a/b") {
		t.Fatal("IsPeriodicChildOf wrong")
	}
	id := DispatchedID("job", "", at)
	if !strings.HasPrefix(id, "job/dispatch-1700000000-") || len(id) != len("job/dispatch-1700000000-")+8 {
		t.Fatalf("dispatched ID %q", id)
	}
	if id := DispatchedID("job", "nightly", at); !strings.HasPrefix(id, "job/dispatch-nightly-1700000000-") {
		t.Fatalf("dispatched ID with prefix %q", id)
	}
}
