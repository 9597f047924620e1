package structs

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func diffBase() *Job {
	return &Job{ID: "web", Name: "web", Type: JobTypeService, Priority: 50, Datacenters: []string{"dc1"},
		Meta: map[string]string{"owner": "ops"},
		TaskGroups: []*TaskGroup{{Name: "g", Count: 1,
			Constraints: []*Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
			Tasks: []*Task{{Name: "t", Driver: "raw_exec", KillTimeout: 5 * time.Second,
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"60"}},
				Resources: &Resources{CPU: 100, MemoryMB: 64}}}}}}
}

// render prints a diff as one line per change, paths joined with "/", so a
// table states exactly what a user would see.
func render(d *api.JobDiff) []string {
	var out []string
	var walk func(path string, fs []*api.FieldDiff, os []*api.ObjectDiff)
	walk = func(path string, fs []*api.FieldDiff, os []*api.ObjectDiff) {
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s %s/%s %q->%q", f.Type, path, f.Name, f.Old, f.New))
		}
		for _, o := range os {
			out = append(out, fmt.Sprintf("%s %s/%s{}", o.Type, path, o.Name))
			walk(path+"/"+o.Name, o.Fields, o.Objects)
		}
	}
	out = append(out, d.Type+" job")
	walk("job", d.Fields, d.Objects)
	for _, tg := range d.TaskGroups {
		out = append(out, fmt.Sprintf("%s group %s", tg.Type, tg.Name))
		walk("g:"+tg.Name, tg.Fields, tg.Objects)
		for _, t := range tg.Tasks {
			out = append(out, fmt.Sprintf("%s task %s", t.Type, t.Name))
			walk("t:"+t.Name, t.Fields, t.Objects)
		}
	}
	return out
}

func TestDiffJobs(t *testing.T) {
	cases := []struct {
		name string
		edit func(j *Job)
		want []string
	}{
		{"identical", func(*Job) {}, []string{"None job"}},
		{"server fields ignored", func(j *Job) { j.Version, j.Status, j.ModifyIndex, j.Stable = 3, "running", 99, true },
			[]string{"None job"}},
		{"job scalar", func(j *Job) { j.Priority = 70 },
			[]string{"Edited job", `Edited job/Priority "50"->"70"`}},
		{"meta added and edited", func(j *Job) { j.Meta = map[string]string{"owner": "dev", "team": "a"} },
			[]string{"Edited job", `Edited job/Meta[owner] "ops"->"dev"`, `Added job/Meta[team] ""->"a"`}},
		{"datacenters as a set", func(j *Job) { j.Datacenters = []string{"dc2", "dc1"} },
			[]string{"Edited job", "Edited job/Datacenters{}", `Added job/Datacenters/Datacenters ""->"dc2"`}},
		{"group count", func(j *Job) { j.TaskGroups[0].Count = 3 },
			[]string{"Edited job", "Edited group g", `Edited g:g/Count "1"->"3"`}},
		{"task config and resources", func(j *Job) {
			t := j.TaskGroups[0].Tasks[0]
			t.Config = map[string]any{"command": "/bin/sleep", "args": []any{"120"}}
			t.Resources = &Resources{CPU: 200, MemoryMB: 64}
		}, []string{"Edited job", "Edited group g", "Edited task t",
			"Edited t:t/Config{}", `Edited t:t/Config/args[0] "60"->"120"`,
			"Edited t:t/Resources{}", `Edited t:t/Resources/CPU "100"->"200"`}},
		{"duration as nanoseconds", func(j *Job) { j.TaskGroups[0].Tasks[0].KillTimeout = 10 * time.Second },
			[]string{"Edited job", "Edited group g", "Edited task t", `Edited t:t/KillTimeout "5000000000"->"10000000000"`}},
		{"constraint replaced", func(j *Job) {
			j.TaskGroups[0].Constraints = []*Constraint{{LTarget: "${attr.kernel.name}", RTarget: "darwin", Operand: "="}}
		}, []string{"Edited job", "Edited group g",
			"Deleted g:g/Constraint{}", `Deleted g:g/Constraint/LTarget "${attr.kernel.name}"->""`,
			`Deleted g:g/Constraint/Operand "="->""`, `Deleted g:g/Constraint/RTarget "linux"->""`,
			"Added g:g/Constraint{}", `Added g:g/Constraint/LTarget ""->"${attr.kernel.name}"`,
			`Added g:g/Constraint/Operand ""->"="`, `Added g:g/Constraint/RTarget ""->"darwin"`}},
		{"task added", func(j *Job) {
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, &Task{Name: "side", Driver: "raw_exec"})
		}, []string{"Edited job", "Edited group g", "Added task side"}},
		{"group deleted", func(j *Job) { j.TaskGroups = nil },
			[]string{"Edited job", "Deleted group g"}},
		// The server's ID, namespace and target of a policy are not user edits.
		{"scaling added", func(j *Job) {
			max := int64(4)
			j.TaskGroups[0].Scaling = &ScalingPolicy{ID: "p1", Namespace: "default", Type: "horizontal", Max: &max,
				Target: map[string]string{"Job": "web", "Group": "g"}, CreateIndex: 3, ModifyIndex: 4}
		}, []string{"Edited job", "Edited group g", "Added g:g/Scaling{}", `Added g:g/Scaling/Max ""->"4"`, `Added g:g/Scaling/Type ""->"horizontal"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := diffBase()
			tc.edit(cur)
			got := render(DiffJobs(diffBase(), cur, false))
			// added/deleted objects list every field; compare only the lines the table names
			// for whole-object cases, and everything otherwise.
			if !strings.HasPrefix(tc.name, "task added") && !strings.HasPrefix(tc.name, "group deleted") {
				assertLines(t, got, tc.want)
				return
			}
			assertPrefix(t, got, tc.want)
		})
	}
}

func assertLines(t *testing.T, got, want []string) {
	t.Helper()
	g, w := append([]string{}, got...), append([]string{}, want...)
	sort.Strings(g)
	sort.Strings(w)
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("diff mismatch\n--- got ---\n%s\n--- want ---\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// assertPrefix checks the wanted lines appear, in order, among got.
func assertPrefix(t *testing.T, got, want []string) {
	t.Helper()
	i := 0
	for _, l := range got {
		if i < len(want) && l == want[i] {
			i++
		}
	}
	if i != len(want) {
		t.Errorf("missing %q\n--- got ---\n%s", want[i], strings.Join(got, "\n"))
	}
}

func TestDiffJobsAddedAndContextual(t *testing.T) {
	d := DiffJobs(nil, diffBase(), false)
	if d.Type != DiffTypeAdded || len(d.TaskGroups) != 1 || d.TaskGroups[0].Type != DiffTypeAdded {
		t.Fatalf("new job: %+v", d)
	}
	for _, f := range d.Fields {
		if f.Type == DiffTypeAdded && f.New == "" {
			t.Fatalf("empty field %s shown as added", f.Name)
		}
	}
	if tk := d.TaskGroups[0].Tasks; len(tk) != 1 || tk[0].Type != DiffTypeAdded {
		t.Fatalf("new job task: %+v", tk)
	}
	// Contextual keeps unchanged fields (type None) and unchanged groups.
	cur := diffBase()
	cur.Priority = 60
	c := DiffJobs(diffBase(), cur, true)
	var none, edited int
	for _, f := range c.Fields {
		switch f.Type {
		case DiffTypeNone:
			none++
		case DiffTypeEdited:
			edited++
		}
	}
	if edited != 1 || none == 0 {
		t.Fatalf("contextual fields: %d edited, %d none", edited, none)
	}
	if len(c.TaskGroups) != 1 || c.TaskGroups[0].Type != DiffTypeNone {
		t.Fatalf("contextual groups: %+v", c.TaskGroups)
	}
	// Non-contextual: an unchanged group is left out.
	if n := DiffJobs(diffBase(), cur, false); len(n.TaskGroups) != 0 || len(n.Fields) != 1 {
		t.Fatalf("non-contextual: groups %d fields %d", len(n.TaskGroups), len(n.Fields))
	}
}
