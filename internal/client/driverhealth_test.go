package client

import (
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// flakyDriver is mock_driver under another name whose fingerprint the test
// sets: an engine that appears, dies and comes back.
type flakyDriver struct {
	*mock.Driver
	mu sync.Mutex
	fp drivers.Fingerprint
}

func (f *flakyDriver) Name() string { return "flaky" }

func (f *flakyDriver) Fingerprint() *drivers.Fingerprint {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp := f.fp
	return &fp
}

func (f *flakyDriver) set(fp drivers.Fingerprint) {
	f.mu.Lock()
	f.fp = fp
	f.mu.Unlock()
}

// A driver detected after the client started, then unhealthy, then healthy
// again, is reported to the servers each time, with the reason, and
// becomes usable for new allocations once detected.
func TestClient_DriverHealthFollowsFingerprint(t *testing.T) {
	fd := &flakyDriver{Driver: mock.New(), fp: drivers.Fingerprint{Health: drivers.HealthUndetected, HealthDescription: "no daemon"}}
	tc := newTestClient(t, func(c *Config) {
		c.Drivers = append(c.Drivers, fd)
		c.DriverHealthInterval = 20 * time.Millisecond
	})
	tc.waitReady(t)
	if tc.driverSet()["flaky"] != nil {
		t.Fatal("an undetected driver is offered to allocations")
	}
	serverSees := func(what string, ok func(detected, healthy bool, desc, attr string) bool) {
		t.Helper()
		testutil.WaitFor(t, 10*time.Second, func() error {
			n := tc.srv.node(tc.NodeID())
			if n == nil || n.Drivers["flaky"] == nil {
				return testutil.Errorf("no node or no flaky driver entry")
			}
			i := n.Drivers["flaky"]
			if !ok(i.Detected, i.Healthy, i.HealthDescription, n.Attributes["driver.flaky"]) {
				return testutil.Errorf("%s: server has detected=%v healthy=%v %q attr %q", what, i.Detected, i.Healthy, i.HealthDescription, n.Attributes["driver.flaky"])
			}
			return nil
		})
	}

	fd.set(drivers.Fingerprint{Health: drivers.HealthHealthy, HealthDescription: "Healthy", Attributes: map[string]string{"driver.flaky": "1"}})
	serverSees("detected", func(d, h bool, desc, attr string) bool { return d && h && attr == "1" })
	if tc.driverSet()["flaky"] == nil {
		t.Fatal("a driver detected after start is not offered to allocations")
	}

	fd.set(drivers.Fingerprint{Health: drivers.HealthUnhealthy, HealthDescription: "Failed to connect to docker daemon"})
	serverSees("unhealthy", func(d, h bool, desc, attr string) bool {
		return d && !h && desc == "Failed to connect to docker daemon" && attr == ""
	})

	fd.set(drivers.Fingerprint{Health: drivers.HealthHealthy, HealthDescription: "Healthy", Attributes: map[string]string{"driver.flaky": "1"}})
	serverSees("healthy again", func(d, h bool, desc, attr string) bool { return d && h && attr == "1" })
}

// A changed fingerprint updates the node without sending every
// allocation's state again: the servers lost nothing, and on a loaded host
// whose engine's optional calls time out now and then, each flip cost a
// Raft write per allocation.
func TestClient_FingerprintChangeDoesNotResendAllocStates(t *testing.T) {
	fd := &flakyDriver{Driver: mock.New(), fp: drivers.Fingerprint{Health: drivers.HealthHealthy, HealthDescription: "Healthy",
		Attributes: map[string]string{"driver.flaky": "1"}}}
	tc := newTestClient(t, func(c *Config) {
		c.Drivers = append(c.Drivers, fd)
		c.DriverHealthInterval = 20 * time.Millisecond
	})
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "1h"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	time.Sleep(1200 * time.Millisecond) // a full non-urgent window: the running state is sent and acknowledged
	before := tc.srv.updatesSent(a.ID, structs.AllocClientStatusRunning)

	fd.set(drivers.Fingerprint{Health: drivers.HealthHealthy, HealthDescription: "Healthy",
		Attributes: map[string]string{"driver.flaky": "1", "driver.flaky.version": "2"}})
	testutil.WaitFor(t, 10*time.Second, func() error {
		if n := tc.srv.node(tc.NodeID()); n == nil || n.Attributes["driver.flaky.version"] != "2" {
			return testutil.Errorf("the servers do not have the new attribute yet")
		}
		return nil
	})
	time.Sleep(1200 * time.Millisecond) // a full non-urgent window
	if after := tc.srv.updatesSent(a.ID, structs.AllocClientStatusRunning); after != before {
		t.Fatalf("a fingerprint change sent the running state again (%d times, was %d)", after, before)
	}
}
