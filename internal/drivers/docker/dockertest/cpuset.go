package dockertest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// CpusetUpdater is the driver method the shared cpuset test drives (the
// docker driver, plain or with the podman flavour).
type CpusetUpdater interface {
	UpdateCpuset(taskID, cpus string) error
}

// SkipUnlessCPUs skips the test on a machine with fewer than n CPUs.
func SkipUnlessCPUs(t testing.TB, n int) {
	t.Helper()
	if runtime.NumCPU() < n {
		t.Skipf("needs %d CPUs, the machine has %d", n, runtime.NumCPU())
	}
}

// HostCpusAllowed is the Cpus_allowed_list of a host process ("gone" when
// the process no longer exists).
func HostCpusAllowed(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "gone"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// SharedCpusetUpdate is the body of the engines' shared-cpuset test: the
// running task taskID (container containerID, started on the shared
// cpuset "0-1") is moved to "0" and back by UpdateCpuset, and after each
// step its process is allowed exactly those CPUs. With hostConfig the
// engine's recorded HostConfig.CpusetCpus must say the same (Docker
// records it; podman's compat inspect does not).
func SharedCpusetUpdate(t *testing.T, d CpusetUpdater, cli *client.Client, taskID, containerID string, hostConfig bool) {
	t.Helper()
	on := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			info, err := cli.ContainerInspect(context.Background(), containerID)
			if err == nil && (!hostConfig || info.HostConfig.CpusetCpus == want) && info.State.Pid > 0 && HostCpusAllowed(info.State.Pid) == want {
				return
			}
			if time.Now().After(deadline) {
				got := ""
				if err == nil {
					got = info.HostConfig.CpusetCpus + " / pid allowed " + HostCpusAllowed(info.State.Pid)
				}
				t.Fatalf("container not on CPUs %s: %s %v", want, got, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	on("0-1")
	if err := d.UpdateCpuset(taskID, "0"); err != nil {
		t.Fatal(err)
	}
	on("0")
	if err := d.UpdateCpuset(taskID, "0-1"); err != nil {
		t.Fatal(err)
	}
	on("0-1")
}
