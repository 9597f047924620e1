// Package testnet hands out machine-wide network names to tests that build
// bridges, veths and network namespaces as root.
//
// A bridge name and an address range are the machine's, not the test
// process's: two runs of the same tests at once (a developer's and CI's)
// with fixed names share one bridge, and the first run's cleanup deletes
// it under the second; two bridges given one subnet fight over its route.
// A test therefore claims a slot: slot i is the bridge "drvnet<i>" and the
// subnet 10.213.(100+i).0/24, held by an exclusive flock on a file named
// for it in the temporary directory for as long as the test runs (the
// kernel drops the lock if the process dies), so no two live test
// processes ever hold the same one.
//
// It is for tests only and must never be imported by the product.
package testnet

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Slots is how many claims can be held at once on a machine.
const Slots = 100

// Net is a claimed slot: a bridge name and an IPv4 /24 of its own.
type Net struct {
	Index  int
	Bridge string // "drvnet<Index>": within the kernel's 15-byte limit
	Prefix string // the subnet's first three octets and a dot: "10.213.105."
	Subnet string // Prefix + "0/24"
}

// Addr is the address of host number n in the subnet (1 is the usual
// gateway).
func (n Net) Addr(host int) string { return fmt.Sprintf("%s%d", n.Prefix, host) }

// Name is a name of at most 15 bytes for an interface or namespace that
// belongs to this slot: prefix, the slot and i ("hj3-0").
func (n Net) Name(prefix string, i int) string {
	return fmt.Sprintf("%s%d-%d", prefix, n.Index, i)
}

// Claim takes a slot no other test (in this process or another) holds and
// keeps it until the test's cleanup, which releases it last of anything
// the test registers after this call. A bridge of the slot's name that a
// crashed run left behind is deleted first. With every slot held the test
// fails.
func Claim(t testing.TB) Net {
	t.Helper()
	n, release, err := claim()
	if err != nil {
		t.Fatalf("testnet: %v", err)
	}
	t.Cleanup(release)
	if _, err := exec.LookPath("ip"); err == nil {
		_ = exec.Command("ip", "link", "del", n.Bridge).Run()
	}
	return n
}

// claim locks a free slot, starting from a random one so that concurrent
// processes rarely contend; release unlocks it.
func claim() (n Net, release func(), err error) {
	if err := os.MkdirAll(lockDir(), 0o777); err != nil {
		return Net{}, nil, err
	}
	start := rand.Intn(Slots)
	for k := 0; k < Slots; k++ {
		i := (start + k) % Slots
		f, err := os.OpenFile(slotPath(i), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return Net{}, nil, err
		}
		if err := flockNB(f); err != nil {
			f.Close()
			continue
		}
		return slot(i), func() { f.Close() }, nil
	}
	return Net{}, nil, fmt.Errorf("all %d network slots in %s are held by other test processes", Slots, lockDir())
}

func lockDir() string { return filepath.Join(os.TempDir(), "drover-testnet") }

func slotPath(i int) string { return filepath.Join(lockDir(), fmt.Sprintf("slot-%d", i)) }

// flockNB takes f's exclusive lock or fails at once. The lock belongs to
// the open file: another open of the same file, even in this process,
// does not get it.
func flockNB(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

func slot(i int) Net {
	prefix := fmt.Sprintf("10.213.%d.", 100+i)
	return Net{Index: i, Bridge: fmt.Sprintf("drvnet%d", i), Prefix: prefix, Subnet: prefix + "0/24"}
}
