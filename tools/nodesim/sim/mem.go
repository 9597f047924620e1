package sim

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Mem is a memory reading of this process.
type Mem struct {
	RSS       uint64 // VmRSS from /proc/self/status (0 where unavailable)
	HeapInuse uint64
	StackSys  uint64
}

// Total is the Go-accounted memory in use: heap plus goroutine stacks.
func (m Mem) Total() uint64 { return m.HeapInuse + m.StackSys }

// ReadMem collects garbage and reads the process's memory.
func ReadMem() Mem {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Mem{RSS: ProcRSS("self"), HeapInuse: ms.HeapInuse, StackSys: ms.StackInuse}
}

// ProcRSS returns VmRSS in bytes of /proc/<pid>/status ("self" for this process).
func ProcRSS(pid string) uint64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
