package bridgenet

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/testnet"
)

// needRoot skips without root (bridges, namespaces, iptables), and fails
// instead in CI, where the tests run as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("iptables"); err == nil {
			return
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI: this test needs root, ip and iptables")
	}
	t.Skip("needs root, ip and iptables")
}

// A bridge an operator set down (or deleted) after the first allocation
// was set up is made again by the next setup, as CNI's bridge plugin does
// on every ADD. Before, the manager ensured the bridge once per process:
// later allocations started "running" on a bridge that was down, their
// ports unreachable.
func TestSetupRestoresABridgeSetDownOrDeleted(t *testing.T) {
	needRoot(t)
	nw := testnet.Claim(t) // bridge and subnet of this run alone
	br, sub := nw.Bridge, nw.Subnet
	m, err := New(Config{BridgeName: br, Subnet: sub, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// Allocation IDs name namespaces and (their first 11 characters) veths,
	// both machine-wide: random as real ones are, never another run's.
	ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	t.Cleanup(func() {
		for _, id := range ids {
			_ = m.Teardown(id)
		}
		_, _ = run("ip", "link", "del", br)
		for _, r := range [][]string{
			{"filter", "FORWARD", "-i", br, "-j", "ACCEPT"},
			{"filter", "FORWARD", "-o", br, "-j", "ACCEPT"},
			{"nat", "POSTROUTING", "-s", sub, "!", "-o", br, "-j", "MASQUERADE"},
			{"nat", "POSTROUTING", "-s", "127.0.0.0/8", "-o", br, "-j", "MASQUERADE"},
		} {
			_, _ = run(append([]string{"iptables", "-w", "-t", r[0], "-D", r[1]}, r[2:]...)...)
		}
	})
	up := func() error {
		out, err := run("ip", "-o", "addr", "show", "dev", br)
		if err != nil {
			return fmt.Errorf("bridge %s: %v", br, err)
		}
		link, _ := run("ip", "-o", "link", "show", "dev", br)
		if !strings.Contains(link, ",UP") || !strings.Contains(out, " "+nw.Addr(1)+"/24 ") {
			return fmt.Errorf("bridge %s not up with its gateway address: %s %s", br, link, out)
		}
		return nil
	}
	if _, err := m.Setup(ids[0], nil); err != nil {
		t.Fatal(err)
	}
	if err := up(); err != nil {
		t.Fatal(err)
	}
	if _, err := run("ip", "link", "set", br, "down"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Setup(ids[1], nil); err != nil {
		t.Fatal(err)
	}
	if err := up(); err != nil {
		t.Fatalf("after the bridge was set down, the next setup: %v", err)
	}
	if _, err := run("ip", "link", "del", br); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Setup(ids[2], nil); err != nil {
		t.Fatal(err)
	}
	if err := up(); err != nil {
		t.Fatalf("after the bridge was deleted, the next setup: %v", err)
	}
	if out, _ := run("ip", "-o", "link", "show", "master", br); !strings.Contains(out, vethName(ids[2])) {
		t.Fatalf("the new allocation's veth is not on the bridge: %s", out)
	}
}
