package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
	"github.com/drover-project/drover/internal/drivers/podman/podmantest"
)

// `resources { cores = 1 }` on a dev agent: the scheduler reserves one of
// the node's cores for the task, and the docker and podman containers are
// confined to exactly that core (their cpuset, as the task itself reads
// it); two such tasks get different cores.
func TestCoresPinContainersToReservedCore(t *testing.T) {
	dcli := dockertest.Client(t)
	dimg := dockertest.BuildBusybox(t, dcli)
	pcli := podmantest.Client(t)
	pimg := podmantest.LoadImage(t, pcli)
	a := devAgent(t)
	waitFor(t, 30*time.Second, "docker and podman healthy", func() bool {
		nodes, _, err := a.client.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
		if err != nil || len(nodes) != 1 {
			return false
		}
		d, p := nodes[0].Drivers["docker"], nodes[0].Drivers["podman"]
		return d != nil && d.Healthy && p != nil && p.Healthy
	})
	held := map[int]string{}
	for _, c := range []struct {
		driver, image string
		cli           *client.Client
	}{{"docker", dimg, dcli}, {"podman", pimg, pcli}} {
		id := "cores-" + c.driver
		job := dockerJob(id, c.image)
		task := job.TaskGroups[0].Tasks[0]
		task.Driver = c.driver
		task.Config["command"] = "/bin/sh"
		task.Config["args"] = []string{"-c", "echo cpuset=$(cat /sys/fs/cgroup/cpuset/cpuset.cpus 2>/dev/null || cat /sys/fs/cgroup/cpuset.cpus.effective) env=$NOMAD_CPU_CORES; exec sleep 600"}
		task.Resources = &api.Resources{Cores: ptr(1), MemoryMB: ptr(16)}
		if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
			t.Fatal(err)
		}
		var al *api.Allocation
		waitFor(t, 60*time.Second, c.driver+" task running", func() bool {
			s := a.allocsOf(id)
			if len(s) != 1 || s[0].ClientStatus != "running" {
				if len(s) == 1 && s[0].ClientStatus == "failed" {
					full, _, _ := a.client.Allocations().Info(s[0].ID, nil)
					t.Fatalf("%s alloc failed: %+v", c.driver, full.TaskStates)
				}
				return false
			}
			al, _, _ = a.client.Allocations().Info(s[0].ID, nil)
			return al != nil
		})
		t.Cleanup(func() { _, _, _ = a.client.Jobs().Deregister(id, true, nil) })
		// Nomad's api type has no ReservedCores; the wire JSON has.
		var wire struct {
			AllocatedResources struct {
				Tasks map[string]struct{ Cpu struct{ ReservedCores []int } }
			}
		}
		resp, err := http.Get(a.url("/v1/allocation/" + al.ID))
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&wire)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		cores := wire.AllocatedResources.Tasks["t"].Cpu.ReservedCores
		if len(cores) != 1 {
			t.Fatalf("%s: reserved cores %v, want one", c.driver, cores)
		}
		core := int(cores[0])
		if other, dup := held[core]; dup {
			t.Fatalf("core %d reserved for both %s and %s", core, other, c.driver)
		}
		held[core] = c.driver
		want := fmt.Sprintf("cpuset=%d env=%d", core, core)
		waitFor(t, 20*time.Second, c.driver+" task reports "+want, func() bool {
			out, code := a.cli(t.TempDir(), "alloc", "logs", al.ID, "t")
			return code == 0 && strings.Contains(out, want)
		})
		cs := dockerContainers(t, c.cli, al.ID)
		if len(cs) != 1 {
			t.Fatalf("%s: containers %+v", c.driver, cs)
		}
		info, err := c.cli.ContainerInspect(context.Background(), cs[0].ID)
		if err != nil || info.HostConfig.CpusetCpus != strconv.Itoa(core) {
			t.Fatalf("%s: container cpuset %q (err %v), want %d", c.driver, info.HostConfig.CpusetCpus, err, core)
		}
	}
}
