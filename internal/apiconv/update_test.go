package apiconv

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/jobspec"
	"github.com/drover-project/drover/internal/structs"
)

// Service jobs without an update block get Nomad's default one (api.Job's
// Canonicalize gives the job DefaultUpdateStrategy and each group inherits
// it), whether they arrive as HTTP JSON or are parsed from HCL; so every
// service job rolls through a deployment. Batch jobs get none.
func TestServiceJobsGetTheDefaultUpdateBlock(t *testing.T) {
	fromJSON := func(src string) *structs.Job {
		var j api.Job
		if err := json.Unmarshal([]byte(src), &j); err != nil {
			t.Fatal(err)
		}
		return ApiJobToStructJob(&j)
	}
	fromHCL := func(src string) *structs.Job {
		j, err := jobspec.Parse("job.hcl", []byte(src), jobspec.ParseConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return ApiJobToStructJob(j)
	}
	wantDefault := func(how string, u *structs.UpdateStrategy) {
		t.Helper()
		if u == nil || u.MaxParallel == nil || *u.MaxParallel != 1 || *u.MinHealthyTime != 10*time.Second ||
			*u.HealthyDeadline != 5*time.Minute || *u.ProgressDeadline != 10*time.Minute || *u.HealthCheck != "checks" ||
			*u.Canary != 0 || *u.AutoRevert || *u.AutoPromote {
			t.Fatalf("%s: update %+v", how, u)
		}
	}
	wantDefault("JSON", fromJSON(`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"raw_exec"}]}]}`).TaskGroups[0].Update)
	wantDefault("HCL", fromHCL(`job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`).TaskGroups[0].Update)

	// A group's own block is merged over the job's, defaults filling the rest.
	j := fromHCL(`job "web" {
  update { max_parallel = 3 }
  group "g" {
    update { canary = 1 }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`)
	if u := j.TaskGroups[0].Update; *u.MaxParallel != 3 || *u.Canary != 1 || *u.ProgressDeadline != 10*time.Minute {
		t.Fatalf("merged update %+v", u)
	}

	b := fromJSON(`{"ID":"b","Type":"batch","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"raw_exec"}]}]}`)
	if b.TaskGroups[0].Update != nil {
		t.Fatalf("batch job got an update block: %+v", b.TaskGroups[0].Update)
	}
}
