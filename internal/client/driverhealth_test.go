package client

import (
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
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
