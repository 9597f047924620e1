package isolate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The v2 files a task's limits become, on a fake hierarchy (this machine's
// controllers are all bound to v1, so a real v2 cgroup cannot have them).
func TestCgroupsV2Files(t *testing.T) {
	old := CgroupRoot
	CgroupRoot = t.TempDir()
	defer func() { CgroupRoot = old }()
	if err := os.WriteFile(filepath.Join(CgroupRoot, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := v2Check(); err != nil {
		t.Fatal(err)
	}
	c := &Cgroups{Parent: "drover", Name: "a.t", V2: true}
	dir := c.Dir("memory")
	if dir != filepath.Join(CgroupRoot, "drover", "a.t") || len(c.Paths()) != 1 || c.Paths()[0] != dir {
		t.Fatalf("v2 dir %s paths %v", dir, c.Paths())
	}
	if err := c.Create(Limits{MemoryMB: 32, MemoryMaxMB: 64, CPUShares: 1024, Cores: []uint16{0, 1}, PidsMax: 50}); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"memory.max": "67108864", "memory.low": "33554432", "cpu.weight": "39", "cpuset.cpus": "0,1", "pids.max": "50",
	} {
		b, _ := os.ReadFile(filepath.Join(dir, file))
		if string(b) != want {
			t.Errorf("%s = %q, want %q", file, b, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(CgroupRoot, "drover", "cgroup.subtree_control")); !strings.HasPrefix(string(b), "+") {
		t.Errorf("controllers not enabled for the task's parent: %q", b)
	}

	for file, body := range map[string]string{
		"cpu.stat":       "usage_usec 2000\nuser_usec 1500\nsystem_usec 500\nnr_periods 0\nnr_throttled 3\nthrottled_usec 7\n",
		"memory.current": "4096\n", "memory.peak": "8192\n", "memory.stat": "anon 1024\nfile 2048\n",
		"memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUNanos != 2_000_000 || s.UserNanos != 1_500_000 || s.ThrottledPeriods != 3 || s.MemUsage != 4096 || s.MemMaxUsage != 8192 || s.RSS != 1024 || s.Cache != 2048 {
		t.Errorf("sample %+v", s)
	}
	if !c.OOMKilled() {
		t.Error("oom_kill 1 not seen")
	}

	if err := os.WriteFile(filepath.Join(CgroupRoot, "cgroup.controllers"), []byte("cpu io hugetlb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := v2Check(); err == nil || !strings.Contains(err.Error(), "lacks the memory, pids, cpuset controllers") {
		t.Errorf("missing controllers: %v", err)
	}
}
