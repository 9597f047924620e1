// Package testutil holds helpers shared by the client's tests: polling with
// a deadline and building jobs/allocations for the mock driver. It must never
// be imported by non-test code.
package testutil

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
	"github.com/google/uuid"
)

// WaitFor polls cond every 10 ms until it returns nil or the deadline
// passes, then fails the test with cond's last error.
func WaitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %s: %v", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Errorf is fmt.Errorf, for terse conditions.
func Errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// MockTask returns a mock_driver task with the given config.
func MockTask(name string, config map[string]any) *structs.Task {
	return &structs.Task{Name: name, Driver: "mock_driver", Config: config, KillTimeout: time.Second}
}

// Alloc returns an allocation of a one-group job with the given tasks.
func Alloc(jobType string, tasks ...*structs.Task) *structs.Allocation {
	job := &structs.Job{
		ID: "job-" + uuid.NewString()[:8], Name: "example", Type: jobType, Namespace: "default", Region: "global",
		Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: 1, Tasks: tasks,
			RestartPolicy: &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: structs.RestartPolicyModeFail},
		}},
	}
	return &structs.Allocation{
		ID: uuid.NewString(), Namespace: "default", Name: job.ID + ".web[0]", JobID: job.ID, Job: job,
		TaskGroup: "web", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
	}
}
