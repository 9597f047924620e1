package testnet

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A helper process for TestProcessesGetDisjointSlots: claims the number of
// slots it is told, prints their indices, and holds them until it exits.
func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv("TESTNET_CHILD_CLAIM")); err == nil {
		for i := 0; i < n; i++ {
			s, _, err := claim()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Println(s.Index)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Claims held at once in one process are distinct slots with valid
// interface names and disjoint /24s; a released slot can be claimed again.
func TestClaimsAreDistinctAndReleased(t *testing.T) {
	const n = 20
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := Claim(t)
			mu.Lock()
			defer mu.Unlock()
			if seen[s.Index] {
				t.Errorf("slot %d handed out twice", s.Index)
			}
			seen[s.Index] = true
			if len(s.Bridge) > 15 || len(s.Name("vhj", 9)) > 15 {
				t.Errorf("names longer than an interface may be: %q %q", s.Bridge, s.Name("vhj", 9))
			}
			if _, ipn, err := net.ParseCIDR(s.Subnet); err != nil || ipn.String() != s.Subnet || !ipn.Contains(net.ParseIP(s.Addr(1))) {
				t.Errorf("subnet %q (%v) does not hold gateway %s", s.Subnet, err, s.Addr(1))
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct slots for %d claims", len(seen), n)
	}

	var held Net
	t.Run("holder", func(t *testing.T) { held = Claim(t) })
	// The subtest ended: its slot is free again.
	f, err := os.OpenFile(slotPath(held.Index), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := flockNB(f); err != nil {
		t.Fatalf("slot %d still locked after its test ended: %v", held.Index, err)
	}
}

// Another process never gets a slot this one holds.
func TestProcessesGetDisjointSlots(t *testing.T) {
	mine := map[int]bool{}
	for i := 0; i < 10; i++ {
		mine[Claim(t).Index] = true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "TESTNET_CHILD_CLAIM=60")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	theirs := map[int]bool{}
	for _, line := range strings.Fields(string(out)) {
		i, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("child printed %q", line)
		}
		if mine[i] {
			t.Errorf("child got slot %d, which this process holds", i)
		}
		theirs[i] = true
	}
	if len(theirs) != 60 {
		t.Fatalf("child got %d distinct slots, want 60", len(theirs))
	}
}
