package integration

import "testing"

// /v1/jobs/parse without canonicalize gives what Nomad's parser gives: the
// constraint and affinity operator "=", the template's ErrMissingKey false,
// the name from the block label, the group scaling type; with canonicalize
// the api defaults come on top. The parsed job then plans onto the dev
// node: the filled-in operator still means equality to the scheduler.
func TestJobsParseFillsParserDefaults(t *testing.T) {
	a := devAgent(t)
	hcl := `job "parsed" {
  id          = "parsed-id"
  datacenters = ["*"]
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
  }
  group "g" {
    scaling {
      max = 3
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      template {
        data        = "x"
        destination = "local/x"
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}`
	raw, err := a.client.Jobs().ParseHCL(hcl, false)
	if err != nil {
		t.Fatal(err)
	}
	tpl := raw.TaskGroups[0].Tasks[0].Templates[0]
	switch {
	case raw.Constraints[0].Operand != "=", raw.Affinities[0].Operand != "=":
		t.Fatalf("operands %q / %q, want =", raw.Constraints[0].Operand, raw.Affinities[0].Operand)
	case raw.Affinities[0].Weight != nil:
		t.Fatalf("affinity weight %d filled by the parser; it is Canonicalize's", *raw.Affinities[0].Weight)
	case tpl.ErrMissingKey == nil || *tpl.ErrMissingKey:
		t.Fatalf("template ErrMissingKey %v, want false", tpl.ErrMissingKey)
	case *raw.ID != "parsed-id" || *raw.Name != "parsed":
		t.Fatalf("ID %q Name %q, want parsed-id / parsed", *raw.ID, *raw.Name)
	case raw.TaskGroups[0].Scaling.Type != "horizontal":
		t.Fatalf("scaling type %q", raw.TaskGroups[0].Scaling.Type)
	case raw.Region != nil || raw.Priority != nil:
		t.Fatalf("parser filled Canonicalize defaults: region %v priority %v", raw.Region, raw.Priority)
	}

	job, err := a.client.Jobs().ParseHCL(hcl, true)
	if err != nil {
		t.Fatal(err)
	}
	if job.Constraints[0].Operand != "=" || job.Affinities[0].Weight == nil || *job.Affinities[0].Weight != 50 || *job.Region != "global" {
		t.Fatalf("canonicalized: operand %q weight %v region %v", job.Constraints[0].Operand, job.Affinities[0].Weight, job.Region)
	}
	job.TaskGroups[0].Tasks[0].Templates = nil // templates are not the point here
	plan, _, err := a.client.Jobs().Plan(job, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u := plan.Annotations.DesiredTGUpdates["g"]; u == nil || u.Place != 1 || len(plan.FailedTGAllocs) != 0 {
		t.Fatalf("plan annotations %+v, failed %+v", plan.Annotations.DesiredTGUpdates, plan.FailedTGAllocs)
	}
}
