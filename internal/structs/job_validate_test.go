package structs

import (
	"strings"
	"testing"
	"time"
)

func validJob() *Job {
	j := &Job{ID: "web", Type: JobTypeService, TaskGroups: []*TaskGroup{{
		Name: "g", Count: 2, Tasks: []*Task{{Name: "t", Driver: "raw_exec"}},
	}}}
	j.Canonicalize()
	return j
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name string
		mut  func(j *Job)
		want string
	}{
		{"negative count", func(j *Job) { j.TaskGroups[0].Count = -1 }, `Task group "g": Count must not be negative (got -1)`},
		{"no driver", func(j *Job) { j.TaskGroups[0].Tasks[0].Driver = "" }, `task "t": Driver: missing task driver`},
		{"bad type", func(j *Job) { j.Type = "daemon" }, `Job.Type: invalid job type "daemon"`},
		{"priority", func(j *Job) { j.Priority = 101 }, "Job.Priority"},
		{"space in id", func(j *Job) { j.ID = "a b" }, "Job.ID"},
		{"dup group", func(j *Job) { j.TaskGroups = append(j.TaskGroups, j.TaskGroups[0]) }, "defined twice"},
		{"tiny memory", func(j *Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 1 }, "Resources.MemoryMB must be at least 10"},
		{"negative task shutdown_delay", func(j *Job) { j.TaskGroups[0].Tasks[0].ShutdownDelay = -3 * time.Second },
			`Task group "g", task "t": ShutdownDelay must not be negative (got -3s)`},
		{"negative group shutdown_delay", func(j *Job) { d := -5 * time.Second; j.TaskGroups[0].ShutdownDelay = &d },
			`Task group "g": ShutdownDelay must not be negative (got -5s)`},
		{"artifact without source", func(j *Job) { j.TaskGroups[0].Tasks[0].Artifacts = []*TaskArtifact{{}} },
			`Task group "g", task "t": Artifacts[0]: source must be specified`},
		{"artifact destination escapes", func(j *Job) {
			s, d := "https://example.com/a.tgz", "../../etc"
			j.TaskGroups[0].Tasks[0].Artifacts = []*TaskArtifact{{GetterSource: &s, RelativeDest: &d}}
		}, `Task group "g", task "t": Artifacts[0]: destination "../../etc" escapes the allocation directory`},
		{"artifact mode", func(j *Job) {
			s, m := "https://example.com/a.tgz", "tree"
			j.TaskGroups[0].Tasks[0].Artifacts = []*TaskArtifact{{GetterSource: &s, GetterMode: &m}}
		}, `Artifacts[0]: mode "tree" is invalid (want any, file or dir)`},
		{"artifact checksum", func(j *Job) {
			s := "https://example.com/a.tgz"
			j.TaskGroups[0].Tasks[0].Artifacts = []*TaskArtifact{{GetterSource: &s, GetterOptions: map[string]string{"checksum": "sha256:abcd"}}}
		}, `Artifacts[0]: checksum "sha256:abcd": a sha256 checksum has 64 hex digits, not 4`},
		{"negative max_run_duration", func(j *Job) { j.Type = JobTypeBatch; d := -time.Minute; j.TaskGroups[0].MaxRunDuration = &d },
			`Task group "g": MaxRunDuration must be positive (got -1m0s)`},
		{"max_run_duration on a service job", func(j *Job) { d := time.Minute; j.TaskGroups[0].MaxRunDuration = &d },
			`Task group "g": MaxRunDuration (max_run_duration) is only supported for batch and sysbatch jobs, not service jobs`},
		{"dup static port", func(j *Job) {
			j.TaskGroups[0].Networks = []*NetworkResource{{ReservedPorts: []Port{{Label: "a", Value: 80}, {Label: "b", Value: 80}}}}
		}, "static port 80 is used by both"},
	}
	upd := func(f func(u *UpdateStrategy)) func(j *Job) {
		return func(j *Job) {
			u := &UpdateStrategy{}
			f(u)
			j.TaskGroups[0].Update = u
		}
	}
	d := func(v time.Duration) *time.Duration { return &v }
	n := func(v int) *int { return &v }
	cases = append(cases, []struct {
		name string
		mut  func(j *Job)
		want string
	}{
		{"update health check", upd(func(u *UpdateStrategy) { s := "bogus"; u.HealthCheck = &s }), `Task group "g": Update.HealthCheck: invalid health check "bogus"`},
		{"update max_parallel", upd(func(u *UpdateStrategy) { u.MaxParallel = n(-5) }), "Update.MaxParallel must not be negative (got -5)"},
		{"update canary", upd(func(u *UpdateStrategy) { u.Canary = n(-1) }), "Update.Canary must not be negative"},
		{"update auto_promote", upd(func(u *UpdateStrategy) { t := true; u.AutoPromote = &t }), "Update.AutoPromote needs a Canary"},
		{"update min_healthy_time", upd(func(u *UpdateStrategy) { u.MinHealthyTime = d(-1) }), "Update.MinHealthyTime must not be negative"},
		{"update healthy_deadline", upd(func(u *UpdateStrategy) { u.HealthyDeadline = d(0) }), "Update.HealthyDeadline must be greater than zero"},
		{"update progress_deadline", upd(func(u *UpdateStrategy) { u.ProgressDeadline = d(-5) }), "Update.ProgressDeadline must not be negative"},
		{"update stagger", upd(func(u *UpdateStrategy) { u.Stagger = d(-1) }), "Update.Stagger must be greater than zero"},
		{"update min >= deadline", upd(func(u *UpdateStrategy) { u.MinHealthyTime, u.HealthyDeadline = d(10), d(1) }), "MinHealthyTime (10ns) must be less than HealthyDeadline (1ns)"},
		{"update deadline >= progress", upd(func(u *UpdateStrategy) { u.HealthyDeadline, u.ProgressDeadline = d(time.Minute), d(time.Second) }), "HealthyDeadline (1m0s) must be less than ProgressDeadline (1s)"},
		// Nomad refuses an update block where no deployment can use it;
		// accepted, its max_parallel was silently ignored.
		{"update on batch", func(j *Job) { j.Type = JobTypeBatch; upd(func(u *UpdateStrategy) { u.MaxParallel = n(1) })(j) },
			`Task group "g": Job type "batch" does not allow update block`},
		{"update on sysbatch", func(j *Job) {
			j.Type = JobTypeSysBatch
			j.TaskGroups[0].Count = 1
			upd(func(u *UpdateStrategy) { u.MaxParallel = n(1) })(j)
		}, `Task group "g": Job type "sysbatch" does not allow update block`},
		// Nomad refuses a migrate block outside service jobs; accepted,
		// it was stored and never used.
		{"migrate on batch", func(j *Job) { j.Type = JobTypeBatch; j.TaskGroups[0].Migrate = &MigrateStrategy{MaxParallel: n(2)} },
			`Task group "g": Job type "batch" does not allow migrate block`},
		{"migrate on system", func(j *Job) {
			j.Type = JobTypeSystem
			j.TaskGroups[0].Count = 1
			j.TaskGroups[0].Migrate = &MigrateStrategy{MaxParallel: n(1)}
		}, `Task group "g": Job type "system" does not allow migrate block`},
	}...)
	svc := func(f func(s *Service)) func(j *Job) {
		return func(j *Job) {
			j.TaskGroups[0].Networks = []*NetworkResource{{DynamicPorts: []Port{{Label: "http"}}}}
			s := &Service{Name: "api", Provider: ServiceProviderNomad, PortLabel: "http",
				Checks: []ServiceCheck{{Name: "c", Type: "http", Path: "/", Interval: time.Second, Timeout: time.Second}}}
			f(s)
			j.TaskGroups[0].Services = []*Service{s}
		}
	}
	cases = append(cases, []struct {
		name string
		mut  func(j *Job)
		want string
	}{
		{"service port", svc(func(s *Service) { s.PortLabel = "htp" }), `Task group "g": service "api": port label "htp" does not exist`},
		{"service task", svc(func(s *Service) { s.TaskName = "nope" }), `service "api": task "nope" does not exist`},
		{"check path", svc(func(s *Service) { s.Checks[0].Path = "" }), `service "api": Checks[0] "c": an http check needs a path`},
		{"check interval", svc(func(s *Service) { s.Checks[0].Interval = 0 }), `Checks[0] "c": interval must be positive`},
		{"check timeout", svc(func(s *Service) { s.Checks[0].Timeout = 0 }), `Checks[0] "c": timeout must be positive`},
		{"check port", svc(func(s *Service) { s.Checks[0].PortLabel = "x" }), `Checks[0] "c": port label "x" does not exist`},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := validJob()
			c.mut(j)
			err := j.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want error containing %q, got %v", c.want, err)
			}
		})
	}
	if err := validJob().Validate(); err != nil {
		t.Fatalf("valid job refused: %v", err)
	}
	for _, typ := range []string{JobTypeService, JobTypeSystem} {
		j := validJob()
		j.Type = typ
		j.TaskGroups[0].Count = 1
		j.TaskGroups[0].Update = &UpdateStrategy{MaxParallel: n(1)}
		if err := j.Validate(); err != nil {
			t.Fatalf("%s job with an update block refused: %v", typ, err)
		}
	}
}

func TestSpecChangedIgnoresServerFields(t *testing.T) {
	a := validJob()
	b := a.Copy()
	b.Version, b.ModifyIndex, b.Status, b.SubmitTime = 7, 99, JobStatusRunning, 12345
	if a.SpecChanged(b) {
		t.Fatal("server-managed fields counted as a spec change")
	}
	b.TaskGroups[0].Count = 3
	if !a.SpecChanged(b) {
		t.Fatal("count change not detected")
	}
}
