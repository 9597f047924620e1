package rawexec

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// signals maps the names a jobspec may use (kill_signal, SignalTask) to
// signals. Names are accepted with or without the SIG prefix.
var signals = map[string]syscall.Signal{
	"SIGABRT": syscall.SIGABRT, "SIGALRM": syscall.SIGALRM, "SIGBUS": syscall.SIGBUS,
	"SIGCHLD": syscall.SIGCHLD, "SIGCONT": syscall.SIGCONT, "SIGFPE": syscall.SIGFPE,
	"SIGHUP": syscall.SIGHUP, "SIGILL": syscall.SIGILL, "SIGINT": syscall.SIGINT,
	"SIGIO": syscall.SIGIO, "SIGKILL": syscall.SIGKILL, "SIGPIPE": syscall.SIGPIPE,
	"SIGPROF": syscall.SIGPROF, "SIGPWR": syscall.SIGPWR, "SIGQUIT": syscall.SIGQUIT,
	"SIGSEGV": syscall.SIGSEGV, "SIGSTOP": syscall.SIGSTOP, "SIGSYS": syscall.SIGSYS,
	"SIGTERM": syscall.SIGTERM, "SIGTRAP": syscall.SIGTRAP, "SIGTSTP": syscall.SIGTSTP,
	"SIGTTIN": syscall.SIGTTIN, "SIGTTOU": syscall.SIGTTOU, "SIGURG": syscall.SIGURG,
	"SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2, "SIGVTALRM": syscall.SIGVTALRM,
	"SIGWINCH": syscall.SIGWINCH, "SIGXCPU": syscall.SIGXCPU, "SIGXFSZ": syscall.SIGXFSZ,
}

// parseSignal turns "SIGTERM", "term" or "" (def) into a signal.
func parseSignal(name string, def syscall.Signal) (syscall.Signal, error) {
	if name == "" {
		return def, nil
	}
	n := strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(n, "SIG") {
		n = "SIG" + n
	}
	if s, ok := signals[n]; ok {
		return s, nil
	}
	return 0, fmt.Errorf("unknown signal %q", name)
}

// procStat is what we need from /proc/<pid>/stat.
type procStat struct {
	state     byte
	pgrp      int
	startTime uint64 // clock ticks after boot; identifies a pid incarnation
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	// comm may contain spaces and parentheses: fields start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 5 is pgrp, field 22 is starttime.
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return procStat{}, err
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, err
	}
	return procStat{state: f[0][0], pgrp: pgrp, startTime: st}, nil
}

// processAlive reports whether pid is still the same incarnation (same start
// time) and not a zombie.
func processAlive(pid int, startTime uint64) bool {
	st, err := readProcStat(pid)
	if err != nil {
		return false
	}
	return st.startTime == startTime && st.state != 'Z' && st.state != 'X'
}

// pidsInGroup scans /proc for live members of process group pgid. It is the
// last-resort tracker when no cgroup is usable.
func pidsInGroup(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.state == 'Z' {
			continue
		}
		if st.pgrp == pgid {
			out = append(out, pid)
		}
	}
	return out
}
