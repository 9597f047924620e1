package testport

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A helper process for TestProcessesGetDisjointPorts: prints the ports it
// took, one per line.
func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv("TESTPORT_CHILD_TAKE")); err == nil {
		for i := 0; i < n; i++ {
			fmt.Println(MustTake())
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestConcurrentTakesAreUniqueAndOutsideEphemeralRange(t *testing.T) {
	const goroutines, each = 8, 40 // more than one block's worth
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p, err := Take()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[p] {
					t.Errorf("port %d handed out twice", p)
				}
				seen[p] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	eph, ok := ephemeralLow()
	for p := range seen {
		if p < lowest || p >= dynamicLow || (ok && p >= eph) {
			t.Errorf("port %d is outside [%d, min(%d, ephemeral %d))", p, lowest, dynamicLow, eph)
		}
	}
	if len(seen) != goroutines*each {
		t.Fatalf("%d ports handed out, want %d", len(seen), goroutines*each)
	}
}

func TestProcessesGetDisjointPorts(t *testing.T) {
	mine := map[int]bool{}
	for i := 0; i < 5; i++ {
		mine[MustTake()] = true
	}
	// Two children at once, each taking more than a block, while this
	// process holds its own block.
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run", "^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("TESTPORT_CHILD_TAKE=%d", blockSize+10))
			outs[i], errs[i] = cmd.Output()
		}(i)
	}
	wg.Wait()
	theirs := map[int]int{}
	for i, out := range outs {
		if errs[i] != nil {
			t.Fatalf("child %d: %v", i, errs[i])
		}
		for _, line := range strings.Fields(string(out)) {
			p, err := strconv.Atoi(line)
			if err != nil {
				t.Fatalf("child %d printed %q", i, line)
			}
			if mine[p] {
				t.Errorf("child %d got port %d, which this process holds", i, p)
			}
			if other, dup := theirs[p]; dup {
				t.Errorf("children %d and %d both got port %d", other, i, p)
			}
			theirs[p] = i
		}
	}
	if len(theirs) != 2*(blockSize+10) {
		t.Fatalf("children got %d distinct ports, want %d", len(theirs), 2*(blockSize+10))
	}
}
