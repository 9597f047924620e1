package client

import (
	"reflect"
	"testing"

	"github.com/drover-project/drover/internal/client/taskrunner"
	"github.com/drover-project/drover/internal/structs"
)

// A driver config may reference what a template with env = true (or an
// identity with env = true) adds to the task's environment, as in Nomad:
// args = ["--password", "${DB_PASS}"].
func TestInterpolateConfigSeesTemplateEnv(t *testing.T) {
	task := &structs.Task{Name: "web", Env: map[string]string{"A": "a"}}
	alloc := &structs.Allocation{ID: "alloc1", Job: &structs.Job{ID: "j"}, TaskGroup: "g"}
	in := taskrunner.EnvInput{Alloc: alloc, Task: task, TaskDir: "/t", AllocDir: "/a"}
	env := buildEnv(in)
	env["DB_PASS"] = "s3cret" // from a template with env = true
	got := interpolateConfig(map[string]any{"args": []any{"--password", "${DB_PASS}", "${A}", "${NOMAD_TASK_NAME}"}}, in, env)
	want := []any{"--password", "s3cret", "a", "web"}
	if !reflect.DeepEqual(got["args"], want) {
		t.Fatalf("args = %v, want %v", got["args"], want)
	}
}
