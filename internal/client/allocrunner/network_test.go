package allocrunner

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/bridgenet"
	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

type fakeNet struct {
	mu       sync.Mutex
	setups   []string
	teardown []string
	err      error
}

func (f *fakeNet) Setup(allocID string, _ structs.AllocatedPorts) (*bridgenet.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setups = append(f.setups, allocID)
	if f.err != nil {
		return nil, f.err
	}
	return &bridgenet.Status{NetNS: "/var/run/netns/" + allocID, Address: "172.26.64.9", Interface: "eth0"}, nil
}

func (f *fakeNet) Teardown(allocID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.teardown = append(f.teardown, allocID)
	return nil
}

func (f *fakeNet) counts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.setups), len(f.teardown)
}

func bridgeRunner(t *testing.T, nw Network, unavailable string) (*structs.Allocation, *recorder) {
	t.Helper()
	d := mock.New()
	alloc := testutil.Alloc(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "50ms"}))
	alloc.Job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "bridge"}}
	rec := &recorder{}
	ar, err := New(Config{
		Alloc: alloc, AllocRoot: t.TempDir(), Node: &structs.Node{ID: "node1", Name: "n1"},
		Drivers: map[string]drivers.Driver{d.Name(): d}, StateUpdater: rec.update,
		MaxKillTimeout: 2 * time.Second, Network: nw, NetworkUnavailable: unavailable,
	})
	if err != nil {
		t.Fatal(err)
	}
	ar.Start()
	t.Cleanup(ar.Shutdown)
	return alloc, rec
}

// A bridge group's network is set up before its task starts, reported as
// the allocation's network status, and torn down once the tasks are done.
func TestAllocRunner_BridgeNetworkLifecycle(t *testing.T) {
	nw := &fakeNet{}
	_, rec := bridgeRunner(t, nw, "")
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	if ns := got.NetworkStatus; ns == nil || ns.Address != "172.26.64.9" || ns.InterfaceName != "eth0" {
		t.Fatalf("network status %+v", got.NetworkStatus)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		if s, td := nw.counts(); s != 1 || td != 1 {
			return errors.New("want one setup and one teardown")
		}
		return nil
	})
}

// Without bridge networking on the node (or when setup fails) the tasks
// fail with a setup failure saying why, and never start.
func TestAllocRunner_BridgeNetworkUnavailableFails(t *testing.T) {
	_, rec := bridgeRunner(t, nil, "bridge networking needs the client to run as root")
	got := waitStatus(t, rec, structs.AllocClientStatusFailed)
	st := got.TaskStates["t"]
	if !st.Failed || !st.StartedAt.IsZero() {
		t.Fatalf("task state %+v", st)
	}
	var msg string
	for _, ev := range st.Events {
		if ev.Type == structs.TaskSetupFailure {
			msg = ev.SetupError
		}
	}
	if !strings.Contains(msg, "needs the client to run as root") {
		t.Fatalf("events %v, want a setup failure naming the reason", eventTypes(st))
	}

	nw := &fakeNet{err: errors.New("no free address")}
	_, rec = bridgeRunner(t, nw, "")
	got = waitStatus(t, rec, structs.AllocClientStatusFailed)
	if !got.TaskStates["t"].Failed {
		t.Fatalf("task state %+v", got.TaskStates["t"])
	}
}

// creatorDriver is the mock driver making the namespace itself, as the
// docker driver does with its pause container.
type creatorDriver struct {
	*mock.Driver
	log func(string)
}

func (d creatorDriver) CreatesNetwork() bool { return true }

func (d creatorDriver) CreateNetwork(allocID, nsPath string) error {
	d.log("create " + nsPath)
	return nil
}

func (d creatorDriver) DestroyNetwork(allocID string) error {
	d.log("destroy " + allocID)
	return nil
}

type loggedNet struct {
	fakeNet
	log func(string)
}

func (n *loggedNet) Setup(allocID string, p structs.AllocatedPorts) (*bridgenet.Status, error) {
	n.log("setup " + allocID)
	return n.fakeNet.Setup(allocID, p)
}

func (n *loggedNet) Teardown(allocID string) error {
	n.log("teardown " + allocID)
	return n.fakeNet.Teardown(allocID)
}

// A task driver that owns the namespace makes it before the network is
// configured in it, and removes it after the network is torn down.
func TestAllocRunner_DriverCreatesNetwork(t *testing.T) {
	var mu sync.Mutex
	var events []string
	log := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
	d := creatorDriver{Driver: mock.New(), log: log}
	alloc := testutil.Alloc(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "50ms"}))
	alloc.Job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "bridge"}}
	rec := &recorder{}
	ar, err := New(Config{
		Alloc: alloc, AllocRoot: t.TempDir(), Node: &structs.Node{ID: "node1", Name: "n1"},
		Drivers: map[string]drivers.Driver{d.Name(): d}, StateUpdater: rec.update,
		MaxKillTimeout: 2 * time.Second, Network: &loggedNet{log: log},
	})
	if err != nil {
		t.Fatal(err)
	}
	ar.Start()
	t.Cleanup(ar.Shutdown)
	waitStatus(t, rec, structs.AllocClientStatusComplete)
	want := []string{"create /var/run/netns/" + alloc.ID, "setup " + alloc.ID, "teardown " + alloc.ID, "destroy " + alloc.ID}
	testutil.WaitFor(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(events) < 4 || strings.Join(events[:4], "|") != strings.Join(want, "|") {
			return errors.New("events " + strings.Join(events, ", ") + "; want " + strings.Join(want, ", "))
		}
		return nil
	})
}
