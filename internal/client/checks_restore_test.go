package client

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
)

// A non-dev client restarted on the same data dir shows its allocation's
// check results at once (what /v1/client/allocation/<id>/checks serves),
// before the checks have run again: the stored result, not an empty list.
func TestClient_CheckResultsSurviveRestart(t *testing.T) {
	requireRawExec(t)
	// The checked endpoint: answers until hold is set, then hangs (the
	// restarted client's first probe cannot finish during the test).
	var hold atomic.Bool
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.Write([]byte("fine"))
	}))
	t.Cleanup(func() { close(release); hs.Close() })
	host, portS, _ := net.SplitHostPort(hs.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)

	tc := newRestartableClient(t, "checks-node", hclog.Error)
	c1 := tc.Client

	a := testutil.Alloc(structs.JobTypeService, &structs.Task{Name: "web", Driver: "raw_exec", KillTimeout: time.Second,
		Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "while :; do sleep 0.05; done"}}})
	a.NodeID = c1.NodeID()
	a.AllocatedResources = &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: structs.AllocatedPorts{{Label: "http", Value: port, HostIP: host}}}}
	a.Job.TaskGroups[0].Services = []*structs.Service{{Name: "web", Provider: "nomad", PortLabel: "http",
		Checks: []structs.ServiceCheck{{Name: "alive", Type: "http", Path: "/", Interval: 100 * time.Millisecond, Timeout: time.Minute}}}}
	tc.srv.upsertAlloc(a)
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	var before string
	testutil.WaitFor(t, 10*time.Second, func() error {
		checks, err := c1.AllocChecks(a.ID)
		if err != nil {
			return err
		}
		for _, c := range checks {
			if c.Status == "success" {
				before = c.ID
				return nil
			}
		}
		return testutil.Errorf("checks %+v", checks)
	})
	hold.Store(true)
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}

	c2 := tc.restart()
	var got string
	testutil.WaitFor(t, 10*time.Second, func() error {
		checks, err := c2.AllocChecks(a.ID)
		if err != nil {
			return err
		}
		for id, c := range checks {
			if c.Status != "success" || c.Check != "alive" || c.Output != "fine" {
				return testutil.Errorf("restored check %+v", c)
			}
			got = id
		}
		if len(checks) != 1 {
			return testutil.Errorf("%d checks after the restart, want the stored one", len(checks))
		}
		return nil
	})
	if got != before {
		t.Fatalf("check %s after the restart, want %s", got, before)
	}
}
