package hoststats

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

func writeProc(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const meminfo = `MemTotal:        8000000 kB
MemFree:         1000000 kB
MemAvailable:    6000000 kB
Buffers:          100000 kB
Cached:          2000000 kB
`

const mounts = `/dev/vda1 / ext4 rw 0 0
proc /proc proc rw 0 0
tmpfs /run tmpfs rw 0 0
/dev/vdb /srv/data\040disk xfs rw 0 0
/dev/vda1 /var/lib/bind ext4 rw 0 0
`

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestCollect(t *testing.T) {
	root := t.TempDir()
	writeProc(t, root, map[string]string{
		"meminfo":     meminfo,
		"uptime":      "12345.67 20000.00\n",
		"self/mounts": mounts,
		// user nice system idle iowait irq softirq steal guest guest_nice
		"stat": "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 60 0 20 400 20 0 0 0 0 0\ncpu1 40 0 30 400 30 0 0 0 0 0\nintr 1 2 3\n",
	})
	fs := map[string]Usage{
		"/":               {Size: 100 << 30, Free: 40 << 30, Available: 35 << 30, Inodes: 1000, InodesFree: 750},
		"/srv/data disk":  {Size: 500 << 30, Free: 500 << 30, Available: 500 << 30, Inodes: 10, InodesFree: 10},
		"/srv/alloc/here": {Size: 100 << 30, Free: 40 << 30, Available: 35 << 30, Inodes: 1000, InodesFree: 750},
	}
	c := &Collector{ProcRoot: root, AllocDir: "/srv/alloc/here", TotalCompute: 2000,
		Statfs: func(p string) (Usage, error) { return fs[p], nil }}

	s, err := c.Collect()
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Memory; m.Total != 8000000<<10 || m.Available != 6000000<<10 || m.Used != 2000000<<10 || m.Free != 1000000<<10 {
		t.Fatalf("memory %+v", m)
	}
	if s.Uptime != 12345 {
		t.Fatalf("uptime %d", s.Uptime)
	}
	if len(s.CPU) != 2 || s.CPU[0].CPU != "cpu0" || s.CPU[0].User != 0 || s.CPUTicksConsumed != 0 {
		t.Fatalf("first sample has no interval, so 0 %%: %+v, ticks %v", s.CPU[0], s.CPUTicksConsumed)
	}
	// One device each, at its first mount point; pseudo filesystems left out.
	if len(s.DiskStats) != 2 || s.DiskStats[0].Mountpoint != "/" || s.DiskStats[1].Mountpoint != "/srv/data disk" {
		t.Fatalf("disks %+v", s.DiskStats)
	}
	root0 := s.DiskStats[0]
	if root0.Device != "/dev/vda1" || root0.Used != 60<<30 || root0.Available != 35<<30 ||
		!near(root0.UsedPercent, 100*60.0/95.0) || !near(root0.InodesUsedPercent, 25) {
		t.Fatalf("root disk %+v", root0)
	}
	if a := s.AllocDirStats; a == nil || a.Mountpoint != "/" || a.Device != "/dev/vda1" || a.Size != 100<<30 {
		t.Fatalf("alloc dir %+v", s.AllocDirStats)
	}

	// Second sample: cpu0 spent 30 user, 10 system, 60 idle jiffies.
	writeProc(t, root, map[string]string{
		"stat": "cpu  130 0 60 860 50 0 0 0 0 0\ncpu0 90 0 30 460 20 0 0 0 0 0\ncpu1 40 0 30 400 30 0 0 0 0 0\n",
	})
	s, err = c.Collect()
	if err != nil {
		t.Fatal(err)
	}
	c0, c1 := s.CPU[0], s.CPU[1]
	if !near(c0.User, 30) || !near(c0.System, 10) || !near(c0.Idle, 60) {
		t.Fatalf("cpu0 %+v", c0)
	}
	if c1.User != 0 || c1.Idle != 0 {
		t.Fatalf("an idle-less, busy-less core with no new time: %+v", c1)
	}
	// The machine: 100 jiffies, 60 idle: 40 % of 2000 MHz.
	if !near(s.CPUTicksConsumed, 800) {
		t.Fatalf("ticks consumed %v", s.CPUTicksConsumed)
	}
	if latest, _ := c.Latest(1 << 40); latest != s {
		t.Fatal("Latest did not return the fresh sample")
	}
}

func TestCollectErrors(t *testing.T) {
	root := t.TempDir()
	c := &Collector{ProcRoot: root}
	if _, err := c.Collect(); err == nil {
		t.Fatal("no meminfo: no error")
	}
	writeProc(t, root, map[string]string{"meminfo": "MemFree: 1 kB\n"})
	if _, err := c.Collect(); err == nil {
		t.Fatal("no MemTotal: no error")
	}
}

// The real host answers too.
func TestCollectHost(t *testing.T) {
	c := &Collector{AllocDir: t.TempDir()}
	s, err := c.Collect()
	if err != nil {
		t.Fatal(err)
	}
	if s.Memory.Total == 0 || s.Memory.Available == 0 || len(s.CPU) == 0 || s.Uptime == 0 ||
		s.AllocDirStats == nil || s.AllocDirStats.Size == 0 {
		t.Fatalf("host sample %+v, alloc dir %+v", s, s.AllocDirStats)
	}
}
