package structs

import (
	"strings"
	"testing"
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
		{"dup static port", func(j *Job) {
			j.TaskGroups[0].Networks = []*NetworkResource{{ReservedPorts: []Port{{Label: "a", Value: 80}, {Label: "b", Value: 80}}}}
		}, "static port 80 is used by both"},
	}
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
