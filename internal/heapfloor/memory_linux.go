package heapfloor

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// memoryAvailable is the machine's RAM, or the memory cgroup's limit when
// lower (cgroups v1 and v2); 0 when unknown.
func memoryAvailable() uint64 {
	var info syscall.Sysinfo_t
	var total uint64
	if syscall.Sysinfo(&info) == nil {
		total = uint64(info.Totalram) * uint64(info.Unit)
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 && (total == 0 || v < total) {
			total = v
		}
	}
	return total
}
