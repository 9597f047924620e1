package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// sleepJob is a service job whose tasks idle; mut shapes its group.
func sleepJob(id string, count int, mut func(tg *api.TaskGroup)) *api.Job {
	job := rawExecJob(id, "service", count, "exec sleep 600")
	if mut != nil {
		mut(job.TaskGroups[0])
	}
	return job
}

// A group asking 3 dynamic ports, count 3, from a 10-port range: all nine
// ports are distinct and inside the range.
func TestDynamicPortsFromTightRangeDistinct(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, map[string]any{
		"client": map[string]any{"min_dynamic_port": 20000, "max_dynamic_port": 20009},
	})
	a.waitReady(true)
	job := sleepJob("ports", 3, func(tg *api.TaskGroup) {
		tg.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "a"}, {Label: "b"}, {Label: "c"}}}}
	})
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var stubs []*api.AllocationListStub
	waitFor(t, 20*time.Second, "3 allocs placed", func() bool {
		stubs = a.allocsOf("ports")
		return len(stubs) == 3
	})
	seen := map[int]string{}
	for _, s := range stubs {
		alloc, _, err := a.client.Allocations().Info(s.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if alloc.AllocatedResources == nil || len(alloc.AllocatedResources.Shared.Ports) != 3 {
			t.Fatalf("alloc %s ports = %+v", alloc.Name, alloc.AllocatedResources)
		}
		for _, p := range alloc.AllocatedResources.Shared.Ports {
			if p.Value < 20000 || p.Value > 20009 {
				t.Errorf("%s port %s=%d outside 20000-20009", alloc.Name, p.Label, p.Value)
			}
			if other, dup := seen[p.Value]; dup {
				t.Errorf("port %d given to %s and %s.%s", p.Value, other, alloc.Name, p.Label)
			}
			seen[p.Value] = alloc.Name + "." + p.Label
		}
	}
	if len(seen) != 9 {
		t.Fatalf("distinct ports = %d, want 9", len(seen))
	}
}

// Three instances wanting one static port on the one node: at most one per
// node address is placed (the dev node's loopback has 127.0.0.1 and, where
// IPv6 is up, ::1, as in Nomad), no (address, port) is given twice, the
// summary counts the rest as queued and a blocked eval names the port.
func TestStaticPortOnePerAddressRestQueued(t *testing.T) {
	a := devAgent(t)
	nodes, _, err := a.client.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes = %v (%v)", nodes, err)
	}
	// The api type has no NodeNetworks; read them from the raw JSON.
	var node struct {
		NodeResources struct {
			NodeNetworks []struct{ Addresses []struct{ Address string } }
		}
	}
	if _, err := a.client.Raw().Query("/v1/node/"+nodes[0].ID, &node, nil); err != nil {
		t.Fatal(err)
	}
	addrs := 0
	for _, nn := range node.NodeResources.NodeNetworks {
		addrs += len(nn.Addresses)
	}
	if addrs < 1 || addrs >= 3 {
		t.Fatalf("dev node has %d addresses; the test needs 1 or 2", addrs)
	}
	port := freePort(t)
	job := sleepJob("static", 3, func(tg *api.TaskGroup) {
		tg.Networks = []*api.NetworkResource{{ReservedPorts: []api.Port{{Label: "http", Value: port}}}}
	})
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	queued := 3 - addrs
	waitFor(t, 20*time.Second, "summary queued="+strconv.Itoa(queued), func() bool {
		sum, _, err := a.client.Jobs().Summary("static", nil)
		return err == nil && sum.Summary["g"].Queued == queued
	})
	stubs := a.allocsOf("static")
	if len(stubs) != addrs {
		t.Fatalf("allocs = %d, want one per address (%d)", len(stubs), addrs)
	}
	used := map[string]bool{}
	for _, s := range stubs {
		alloc, _, err := a.client.Allocations().Info(s.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range alloc.AllocatedResources.Shared.Ports {
			key := p.HostIP + ":" + strconv.Itoa(p.Value)
			if p.Value != port || used[key] {
				t.Fatalf("port %s=%s reused or wrong (want %d once per address)", p.Label, key, port)
			}
			used[key] = true
		}
	}
	blocked := blockedEvalOf(t, a, "static")
	m := blocked.FailedTGAllocs["g"]
	if m == nil {
		t.Fatalf("blocked eval %s has no FailedTGAllocs", blocked.ID)
	}
	key := "network: reserved port collision http=" + strconv.Itoa(port)
	if m.DimensionExhausted[key] == 0 || m.NodesExhausted == 0 {
		t.Fatalf("blocked eval metrics do not name %q: %+v", key, m)
	}
}

// An impossible constraint leaves a blocked eval whose metrics name it.
func TestImpossibleConstraintBlockedEvalNamesIt(t *testing.T) {
	a := devAgent(t)
	job := sleepJob("nowhere", 1, nil)
	job.Constraints = []*api.Constraint{api.NewConstraint("${attr.kernel.name}", "=", "windows")}
	resp, _, err := a.client.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	blocked := blockedEvalOf(t, a, "nowhere")
	m := blocked.FailedTGAllocs["g"]
	if m == nil || m.ConstraintFiltered["${attr.kernel.name} = windows"] != 1 || m.NodesFiltered != 1 {
		t.Fatalf("blocked eval metrics = %+v", m)
	}
	// The registering evaluation's completion is written after the blocked
	// evaluation it names was created: wait for it, as a monitor does.
	var ev *api.Evaluation
	waitFor(t, 20*time.Second, "registering eval complete", func() bool {
		ev, _, err = a.client.Evaluations().Info(resp.EvalID, nil)
		return err == nil && ev.Status == api.EvalStatusComplete
	})
	if ev.BlockedEval != blocked.ID || ev.FailedTGAllocs["g"] == nil {
		t.Fatalf("registering eval = %+v", ev)
	}
	if sum, _, err := a.client.Jobs().Summary("nowhere", nil); err != nil || sum.Summary["g"].Queued != 1 {
		t.Fatalf("summary = %+v (%v)", sum, err)
	}
}

// Jobs().Plan annotates placements and registers nothing.
func TestPlanAnnotatesWithoutRegistering(t *testing.T) {
	a := devAgent(t)
	job := sleepJob("planned", 2, nil)
	resp, _, err := a.client.Jobs().Plan(job, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Annotations == nil || resp.Annotations.DesiredTGUpdates["g"] == nil || resp.Annotations.DesiredTGUpdates["g"].Place != 2 {
		t.Fatalf("annotations = %+v", resp.Annotations)
	}
	if resp.Diff == nil || resp.Diff.Type != "Added" || len(resp.FailedTGAllocs) != 0 {
		t.Fatalf("diff %+v failed %+v", resp.Diff, resp.FailedTGAllocs)
	}
	jobs, _, err := a.client.Jobs().List(nil)
	if err != nil || len(jobs) != 0 {
		t.Fatalf("job list after plan = %+v (%v)", jobs, err)
	}
	evals, _, err := a.client.Evaluations().List(nil)
	if err != nil || len(evals) != 0 {
		t.Fatalf("evals after plan = %d (%v)", len(evals), err)
	}
}

func blockedEvalOf(t *testing.T, a *agent, jobID string) *api.Evaluation {
	t.Helper()
	var blocked *api.Evaluation
	waitFor(t, 20*time.Second, "blocked eval of "+jobID, func() bool {
		evals, _, err := a.client.Jobs().Evaluations(jobID, nil)
		if err != nil {
			return false
		}
		for _, e := range evals {
			if e.Status == "blocked" {
				blocked = e
				return true
			}
		}
		return false
	})
	return blocked
}

// `drover job plan -explain` against a dev agent prints the filter and
// ranking tables after the plan, and still registers nothing.
func TestJobPlanExplainCLI(t *testing.T) {
	a := devAgent(t)
	spec := filepath.Join(t.TempDir(), "web.nomad.hcl")
	hcl := `job "web" {
  datacenters = ["*"]
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  group "g" {
    count = 2
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
    }
  }
}
`
	if err := os.WriteFile(spec, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(droverBin, "job", "plan", "-explain", spec)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+a.url(""))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1 (allocations created):\n%s", err, out)
	}
	for _, want := range []string{"Placement explain:", `Task Group "g": 1 nodes evaluated, 1 ranked`, "binpack", "Final", "Placed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if jobs, _, err := a.client.Jobs().List(nil); err != nil || len(jobs) != 0 {
		t.Fatalf("job list after plan = %v (%v)", jobs, err)
	}
}
