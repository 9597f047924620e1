package docker

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostCpusAllowed is the Cpus_allowed_list of a host process.
func hostCpusAllowed(pid int) string {
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

// A container without reserved cores is created on the node's shared
// cpuset and moved, while it runs, when the shared set changes (a task
// reserving a core started or stopped on the node). 2 CPUs: 0-1, then 0.
func TestEngineSharedCpusetUpdate(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skipf("needs 2 CPUs, the machine has %d", runtime.NumCPU())
	}
	d, cli, img := engineDriver(t)
	cfg := engineTask(t, "shared", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"300"}}, 32)
	cfg.SharedCpuset = "0-1"
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	h, err := d.get(cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	on := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			info, err := cli.ContainerInspect(context.Background(), h.state.ContainerID)
			if err == nil && info.HostConfig.CpusetCpus == want && info.State.Pid > 0 && hostCpusAllowed(info.State.Pid) == want {
				return
			}
			if time.Now().After(deadline) {
				got := ""
				if err == nil {
					got = info.HostConfig.CpusetCpus + " / pid allowed " + hostCpusAllowed(info.State.Pid)
				}
				t.Fatalf("container not on CPUs %s: %s %v", want, got, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	on("0-1")
	if err := d.UpdateCpuset(cfg.ID, "0"); err != nil {
		t.Fatal(err)
	}
	on("0")
	if err := d.UpdateCpuset(cfg.ID, "0-1"); err != nil {
		t.Fatal(err)
	}
	on("0-1")
}
