package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// The docker driver end to end on a dev agent, against the local engine
// (skipped without one, failed in CI): a job serving HTTP on its group
// port, reached on the allocation's host port; its output in `alloc logs`;
// `alloc exec` runs a command in it; stopping the job removes the container; a container over its memory
// limit is reported OOM killed in the task events.

const dockerWebJob = `
job "dweb" {
  datacenters = ["*"]
  group "web" {
    count = 2
    network {
      port "http" { to = 8080 }
    }
    task "server" {
      driver = "docker"
      config {
        image   = "%s"
        command = "/bin/sh"
        args    = ["-c", "echo hello from $NOMAD_ALLOC_ID; echo served > /local/index.html; exec httpd -f -p 8080 -h /local"]
        ports   = ["http"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

func dockerContainers(t *testing.T, cli *client.Client, allocID string) []container.Summary {
	t.Helper()
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "com.hashicorp.nomad.alloc_id="+allocID))})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestDockerJobServesLogsAndStops(t *testing.T) {
	cli := dockertest.Client(t)
	img := dockertest.BuildBusybox(t, cli)
	a := devAgent(t)
	waitFor(t, 20*time.Second, "node reports docker healthy", func() bool {
		nodes, _, err := a.client.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
		if err != nil || len(nodes) != 1 {
			return false
		}
		d := nodes[0].Drivers["docker"]
		return d != nil && d.Detected && d.Healthy
	})

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dweb.nomad.hcl"), []byte(fmt.Sprintf(dockerWebJob, img)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := a.cli(dir, "job", "run", "-detach", "dweb.nomad.hcl"); code != 0 {
		t.Fatalf("job run: exit %d\n%s", code, out)
	}
	var allocs []*api.Allocation
	waitFor(t, 60*time.Second, "both allocations running", func() bool {
		allocs = allocs[:0]
		for _, s := range a.allocsOf("dweb") {
			if s.ClientStatus == "failed" {
				al, _, _ := a.client.Allocations().Info(s.ID, nil)
				t.Fatalf("allocation failed: %+v", al.TaskStates)
			}
			if s.ClientStatus != "running" {
				return false
			}
			al, _, err := a.client.Allocations().Info(s.ID, nil)
			if err != nil {
				return false
			}
			allocs = append(allocs, al)
		}
		return len(allocs) == 2
	})

	seen := map[int]bool{}
	for _, al := range allocs {
		var port *api.PortMapping
		for i, p := range al.AllocatedResources.Shared.Ports {
			if p.Label == "http" {
				port = &al.AllocatedResources.Shared.Ports[i]
			}
		}
		if port == nil || port.To != 8080 || port.Value == 0 {
			t.Fatalf("alloc %s has no http port mapping: %+v", al.ID, al.AllocatedResources.Shared.Ports)
		}
		seen[port.Value] = true
		url := "http://" + net.JoinHostPort(port.HostIP, strconv.Itoa(port.Value)) + "/index.html"
		waitFor(t, 20*time.Second, "the container answers on "+url, func() bool {
			resp, err := http.Get(url)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode == 200 && strings.TrimSpace(string(b)) == "served"
		})
		waitFor(t, 20*time.Second, "alloc logs show the container's output", func() bool {
			out, code := a.cli(dir, "alloc", "logs", al.ID, "server")
			return code == 0 && strings.Contains(out, "hello from "+al.ID)
		})
		if cs := dockerContainers(t, cli, al.ID); len(cs) != 1 || cs[0].State != "running" {
			t.Fatalf("alloc %s: want one running container, got %+v", al.ID, cs)
		}
	}

	// The container's use, sampled by the engine, through Nomad's api.
	u, err := a.client.Allocations().Stats(allocs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if tu := u.Tasks["server"]; tu == nil || tu.ResourceUsage.MemoryStats.Usage == 0 || u.ResourceUsage.MemoryStats.Usage == 0 {
		t.Fatalf("alloc stats without the container's memory: %+v", u)
	}

	// alloc exec runs a command inside the container, with the task's
	// environment, and exits with its exit code.
	out, code := a.cli(dir, "alloc", "exec", "-task", "server", allocs[0].ID[:8], "/bin/sh", "-c", `echo "in $NOMAD_ALLOC_ID"; cat /local/index.html; exit 5`)
	if code != 5 || !strings.Contains(out, "in "+allocs[0].ID) || !strings.Contains(out, "served") {
		t.Fatalf("alloc exec: exit %d\n%s", code, out)
	}
	if len(seen) != 2 {
		t.Fatalf("two allocations on one node share a host port: %v", seen)
	}

	if out, code := a.cli(dir, "job", "stop", "dweb"); code != 0 {
		t.Fatalf("job stop: exit %d\n%s", code, out)
	}
	for _, al := range allocs {
		waitFor(t, 30*time.Second, "the stopped allocation's container is removed", func() bool {
			return len(dockerContainers(t, cli, al.ID)) == 0
		})
	}
}

const dockerOOMJob = `
job "doom" {
  datacenters = ["*"]
  type = "batch"
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "hog" {
      driver = "docker"
      config {
        image   = "%s"
        command = "/bin/sh"
        args    = ["-c", "tail /dev/zero"]
      }
      resources {
        cpu    = 50
        memory = 16
      }
    }
  }
}
`

func TestDockerOOMKillReported(t *testing.T) {
	cli := dockertest.Client(t)
	img := dockertest.BuildBusybox(t, cli)
	a := devAgent(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "doom.nomad.hcl"), []byte(fmt.Sprintf(dockerOOMJob, img)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := a.cli(dir, "job", "run", "-detach", "doom.nomad.hcl"); code != 0 {
		t.Fatalf("job run: exit %d\n%s", code, out)
	}
	var al *api.Allocation
	waitFor(t, 60*time.Second, "the allocation fails", func() bool {
		s := a.allocsOf("doom")
		if len(s) != 1 || s[0].ClientStatus != "failed" {
			return false
		}
		var err error
		al, _, err = a.client.Allocations().Info(s[0].ID, nil)
		return err == nil
	})
	var term *api.TaskEvent
	for _, e := range al.TaskStates["hog"].Events {
		if e.Type == "Terminated" {
			term = e
		}
	}
	if term == nil || term.Details["oom_killed"] != "true" || term.ExitCode != 137 || !strings.Contains(term.DisplayMessage, "OOM Killed") {
		t.Fatalf("want a Terminated event saying OOM killed, got %+v", term)
	}
	out, code := a.cli(dir, "alloc", "status", al.ID)
	if code != 0 || !strings.Contains(out, "OOM Killed") {
		t.Fatalf("alloc status does not say OOM Killed (exit %d):\n%s", code, out)
	}
}

// The README's container example: scripts/docker-example-image.sh builds
// a FROM-scratch image around a static Go HTTP server, and
// examples/docker.nomad.hcl runs two of them, each answering on its own
// host port.
func TestDockerReadmeExample(t *testing.T) {
	cli := dockertest.Client(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command(filepath.Join(root, "scripts/docker-example-image.sh"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/docker-example-image.sh: %v\n%s", err, out)
	}
	if _, err := cli.ImageInspect(context.Background(), "drover-hello:local"); err != nil {
		t.Fatalf("the script built no drover-hello:local: %v", err)
	}
	a := devAgent(t)
	// A node is ready before a slow engine answers the driver's
	// fingerprint; `job run` would then see a blocked evaluation.
	waitFor(t, 30*time.Second, "node reports docker healthy", func() bool {
		nodes, _, err := a.client.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
		if err != nil || len(nodes) != 1 {
			return false
		}
		d := nodes[0].Drivers["docker"]
		return d != nil && d.Detected && d.Healthy
	})
	if out, code := a.cli(root, "job", "run", "examples/docker.nomad.hcl"); code != 0 {
		t.Fatalf("job run: exit %d\n%s", code, out)
	}
	defer a.cli(root, "job", "stop", "-purge", "web")
	stubs := a.allocsOf("web")
	if len(stubs) != 2 {
		t.Fatalf("want 2 allocations, got %d", len(stubs))
	}
	for _, s := range stubs {
		al, _, err := a.client.Allocations().Info(s.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := al.AllocatedResources.Shared.Ports[0]
		url := "http://" + net.JoinHostPort(p.HostIP, strconv.Itoa(p.Value)) + "/"
		waitFor(t, 30*time.Second, "the example answers on "+url, func() bool {
			resp, err := http.Get(url)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return strings.Contains(string(b), "hello from") && strings.Contains(string(b), "(alloc "+al.ID+")")
		})
	}
}
