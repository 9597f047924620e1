package bridgenet

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// Agents (or test runs) setting up their first bridge at once all get the
// port-mapping chain: before, one found it missing, another made it, and
// the first one's creation failed "Chain already exists", failing its
// allocation's network setup.
func TestEnsureChainConcurrently(t *testing.T) {
	needRoot(t)
	chain := fmt.Sprintf("DRVT-%d", os.Getpid()) // this run's alone (at most 28 characters)
	t.Cleanup(func() { _ = exec.Command("iptables", "-w", "-t", "nat", "-X", chain).Run() })
	for round := 0; round < 5; round++ {
		_ = exec.Command("iptables", "-w", "-t", "nat", "-X", chain).Run()
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = ensureChain("nat", chain)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, caller %d: %v", round, i, err)
			}
		}
	}
	if out, err := exec.Command("iptables", "-w", "-t", "nat", "-S", chain).CombinedOutput(); err != nil {
		t.Fatalf("the chain is missing: %v: %s", err, out)
	}
}
