// Package testport hands out loopback ports to tests and benchmarks that
// start agents as separate processes.
//
// Asking the kernel for a free port (listen on :0, close, pass the number
// on) races with everything else on the machine: the port comes from the
// ephemeral range, so between the close and the agent's bind any outgoing
// connection, or another test binary doing the same, may take it, and the
// agent fails with "address already in use". CI saw exactly that.
//
// This package instead takes ports below the ephemeral range and below
// the client's default dynamic port range (tasks bind those), in blocks of
// blockSize. A process claims a block by holding an exclusive flock on a
// file named for it in the temporary directory, so two test processes
// never share a block, and the kernel never hands a port there to an
// outgoing connection. Within its block a process hands each port out
// once, after checking that TCP and UDP on 127.0.0.1 can both bind it
// (serf uses both).
package testport

import (
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

const (
	blockSize = 64
	// lowest is the first port handed out; high enough to stay clear of
	// the well-known and registered services a machine commonly runs.
	lowest = 10000
	// dynamicLow is the client's default lowest dynamic port: tasks bind
	// ports from there, so test agents stay below it.
	dynamicLow = 20000
)

var state struct {
	sync.Mutex
	lo, hi int        // the port range blocks are taken from
	blocks []*os.File // held locks, released when the process exits
	next   int        // next port to try in the current block
	end    int        // one past the current block's last port
	tried  map[int]bool
}

// Take returns a port that was bindable on 127.0.0.1 for TCP and UDP a
// moment ago and that no other user of this package (in this process or
// another) will be given while this process runs.
func Take() (int, error) {
	state.Lock()
	defer state.Unlock()
	if state.tried == nil {
		state.tried = map[int]bool{}
		state.lo, state.hi = portRange()
	}
	for {
		for state.next < state.end {
			p := state.next
			state.next++
			if bindable(p) {
				return p, nil
			}
		}
		if err := claimBlock(); err != nil {
			return 0, err
		}
	}
}

// MustTake is Take for callers that cannot go on without a port.
func MustTake() int {
	p, err := Take()
	if err != nil {
		panic(err)
	}
	return p
}

// claimBlock locks a block no process holds, starting from a random one so
// that concurrent processes rarely contend, and makes it current.
func claimBlock() error {
	n := (state.hi - state.lo) / blockSize
	if n <= 0 {
		return fmt.Errorf("testport: no port range outside the ephemeral one")
	}
	dir := filepath.Join(os.TempDir(), "drover-testport")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("testport: %w", err)
	}
	start := rand.Intn(n)
	for i := 0; i < n; i++ {
		b := (start + i) % n
		if state.tried[b] {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("block-%d-%d", state.lo, b)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return fmt.Errorf("testport: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		state.tried[b] = true
		state.blocks = append(state.blocks, f)
		state.next = state.lo + b*blockSize
		state.end = state.next + blockSize
		return nil
	}
	return fmt.Errorf("testport: every block of ports in %d-%d is held by another process or used up", state.lo, state.hi)
}

// portRange is where blocks come from: from lowest up to whichever comes
// first of the client's dynamic ports and the kernel's ephemeral ones.
func portRange() (lo, hi int) {
	lo, hi = lowest, dynamicLow
	if eph, ok := ephemeralLow(); ok && eph < hi {
		hi = eph
	}
	return lo, hi
}

func ephemeralLow() (int, bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	n, err := strconv.Atoi(f[0])
	return n, err == nil
}

func bindable(p int) bool {
	addr := fmt.Sprintf("127.0.0.1:%d", p)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer ln.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	pc.Close()
	return true
}
