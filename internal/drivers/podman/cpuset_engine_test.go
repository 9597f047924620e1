package podman

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

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

// A podman container without reserved cores starts on the node's shared
// cpuset and is moved while it runs when the shared set changes, through
// the service's Docker-compatible container update. 2 CPUs: 0-1, then 0.
func TestPodmanSharedCpusetUpdate(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skipf("needs 2 CPUs, the machine has %d", runtime.NumCPU())
	}
	d, cli, img := engineDriver(t)
	cfg := engineTask(t, "shared", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"300"}})
	cfg.SharedCpuset = "0-1"
	h, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	id := containerID(t, h)
	on := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			info, err := cli.ContainerInspect(context.Background(), id)
			if err == nil && info.State.Pid > 0 && hostCpusAllowed(info.State.Pid) == want {
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
