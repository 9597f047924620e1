package client

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
)

// client.options driver.denylist and driver.allowlist (Nomad's) leave a
// driver off the node: the servers place nothing on it. They were ignored:
// an operator who disabled a driver this way still had tasks placed on it.
// A task that driver runs from before is still recovered.
func TestClient_DriverDenyAndAllowLists(t *testing.T) {
	for name, opts := range map[string]map[string]string{
		"denylist":  {"driver.denylist": " flaky , other"},
		"allowlist": {"driver.allowlist": "mock_driver"},
	} {
		t.Run(name, func(t *testing.T) {
			fd := &flakyDriver{Driver: mock.New(), fp: drivers.Fingerprint{Health: drivers.HealthHealthy, HealthDescription: "ok",
				Attributes: map[string]string{"driver.flaky": "1"}}}
			tc := newTestClient(t, func(c *Config) {
				c.Drivers = append(c.Drivers, fd)
				c.Options = opts
				c.DriverHealthInterval = 20 * time.Millisecond
			})
			tc.waitReady(t)
			testutil.WaitFor(t, 10*time.Second, func() error {
				n := tc.srv.node(tc.NodeID())
				if n == nil || n.Drivers["mock_driver"] == nil || !n.Drivers["mock_driver"].Detected {
					return testutil.Errorf("mock_driver not offered: %+v", n)
				}
				return nil
			})
			n := tc.srv.node(tc.NodeID())
			if n.Drivers["flaky"] != nil || n.Attributes["driver.flaky"] != "" {
				t.Fatalf("the node offers the disabled driver: %+v, attribute %q", n.Drivers["flaky"], n.Attributes["driver.flaky"])
			}
			if tc.driverSet()["flaky"] != nil {
				t.Fatal("new allocations may use the disabled driver")
			}
			if tc.restoreDriverSet()["flaky"] == nil {
				t.Fatal("a task the disabled driver ran before would not be recovered")
			}
		})
	}
}
