package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers/podman/podmantest"
)

// The podman driver end to end, against the local podman API service
// (skipped without one, failed in CI): the FROM-scratch busybox image,
// loaded from a `docker save` tarball, serves HTTP on each allocation's
// host port; its output is in `alloc logs`; `alloc exec` runs in it; the
// client agent killed with SIGKILL and started again re-attaches to the same
// container; stopping the job removes the containers.

const podmanWebJob = `
job "pweb" {
  datacenters = ["*"]
  group "web" {
    count = 2
    network {
      port "http" { to = 8080 }
    }
    task "server" {
      driver = "podman"
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

func podmanContainers(t *testing.T, cli *client.Client, allocID string) []container.Summary {
	t.Helper()
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "com.hashicorp.nomad.alloc_id="+allocID))})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestPodmanJobServesExecsReattachesAndStops(t *testing.T) {
	pcli := podmantest.Client(t)
	img := podmantest.LoadImage(t, pcli)
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	cl := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"leave_on_interrupt": false, "log_level": "INFO",
	})
	podmanReady := func() bool {
		nodes, _, err := srv.client.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
		if err != nil || len(nodes) != 1 || nodes[0].Status != "ready" {
			return false
		}
		d := nodes[0].Drivers["podman"]
		return d != nil && d.Detected && d.Healthy && d.Attributes["driver.podman.rootless"] == "false"
	}
	waitFor(t, 30*time.Second, "node ready with podman healthy", podmanReady)

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pweb.nomad.hcl"), []byte(fmt.Sprintf(podmanWebJob, img)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := srv.cli(dir, "job", "run", "-detach", "pweb.nomad.hcl"); code != 0 {
		t.Fatalf("job run: exit %d\n%s", code, out)
	}
	var allocs []*api.Allocation
	waitFor(t, 90*time.Second, "both allocations running", func() bool {
		allocs = allocs[:0]
		for _, s := range srv.allocsOf("pweb") {
			if s.ClientStatus == "failed" {
				al, _, _ := srv.client.Allocations().Info(s.ID, nil)
				t.Fatalf("allocation failed: %+v", al.TaskStates["server"])
			}
			if s.ClientStatus != "running" {
				return false
			}
			al, _, err := srv.client.Allocations().Info(s.ID, nil)
			if err != nil {
				return false
			}
			allocs = append(allocs, al)
		}
		return len(allocs) == 2
	})
	t.Cleanup(func() {
		for _, al := range allocs {
			for _, c := range podmanContainers(t, pcli, al.ID) {
				_ = pcli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
			}
		}
	})

	ports := map[int]bool{}
	containers := map[string]container.InspectResponse{}
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
		ports[port.Value] = true
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
			out, code := cl.cli(dir, "alloc", "logs", al.ID, "server")
			return code == 0 && strings.Contains(out, "hello from "+al.ID)
		})
		cs := podmanContainers(t, pcli, al.ID)
		if len(cs) != 1 || cs[0].State != "running" {
			t.Fatalf("alloc %s: want one running container, got %+v", al.ID, cs)
		}
		info, err := pcli.ContainerInspect(context.Background(), cs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		containers[al.ID] = info
	}
	if len(ports) != 2 {
		t.Fatalf("two allocations on one node share a host port: %v", ports)
	}

	out, code := cl.cli(dir, "alloc", "exec", "-task", "server", allocs[0].ID[:8], "/bin/sh", "-c", `echo "in $NOMAD_ALLOC_ID"; cat /local/index.html; exit 5`)
	if code != 5 || !strings.Contains(out, "in "+allocs[0].ID) || !strings.Contains(out, "served") {
		t.Fatalf("alloc exec: exit %d\n%s", code, out)
	}

	// (logs and exec ask the client agent: they reach a client's tasks
	// through it.)
	// SIGKILL the client agent; the started one re-attaches to the same
	// containers without restarting them.
	cl.kill()
	cl.start()
	waitFor(t, 60*time.Second, "node ready again", podmanReady)
	for _, al := range allocs {
		cs := podmanContainers(t, pcli, al.ID)
		if len(cs) != 1 || cs[0].ID != containers[al.ID].ID {
			t.Fatalf("alloc %s after the restart: containers %+v, want only %s", al.ID, cs, containers[al.ID].ID)
		}
		after, err := pcli.ContainerInspect(context.Background(), cs[0].ID)
		if err != nil || !after.State.Running || after.State.StartedAt != containers[al.ID].State.StartedAt {
			t.Fatalf("alloc %s: the container was restarted: %+v %v", al.ID, after.State, err)
		}
	}
	// The re-attached client still runs exec in it (it holds the task).
	waitFor(t, 30*time.Second, "exec through the restarted client", func() bool {
		out, code := cl.cli(dir, "alloc", "exec", "-task", "server", allocs[1].ID[:8], "cat", "/local/index.html")
		return code == 0 && strings.Contains(out, "served")
	})
	for _, s := range srv.allocsOf("pweb") {
		if s.ClientStatus != "running" {
			t.Fatalf("allocation %s is %s after the client restart", s.ID, s.ClientStatus)
		}
	}

	if out, code := srv.cli(dir, "job", "stop", "pweb"); code != 0 {
		t.Fatalf("job stop: exit %d\n%s", code, out)
	}
	for _, al := range allocs {
		waitFor(t, 30*time.Second, "the stopped allocation's container is removed", func() bool {
			return len(podmanContainers(t, pcli, al.ID)) == 0
		})
	}
}

// A podman task over its memory limit: the allocation fails and its
// Terminated event says OOM Killed (the driver reads the kernel's record:
// podman 4.3 does not flag it).
func TestPodmanOOMKillReported(t *testing.T) {
	pcli := podmantest.Client(t)
	img := podmantest.LoadImage(t, pcli)
	a := devAgent(t)
	dir := t.TempDir()
	job := strings.ReplaceAll(strings.ReplaceAll(dockerOOMJob, `driver = "docker"`, `driver = "podman"`), `job "doom"`, `job "poom"`)
	if err := os.WriteFile(filepath.Join(dir, "poom.nomad.hcl"), []byte(fmt.Sprintf(job, img)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := a.cli(dir, "job", "run", "-detach", "poom.nomad.hcl"); code != 0 {
		t.Fatalf("job run: exit %d\n%s", code, out)
	}
	var al *api.Allocation
	waitFor(t, 60*time.Second, "the allocation fails", func() bool {
		s := a.allocsOf("poom")
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
}
