package client

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/rawexec"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
)

// A non-dev client restarted on the same data dir shows its allocation's
// check results at once (what /v1/client/allocation/<id>/checks serves),
// before the checks have run again: the stored result, not an empty list.
func TestClient_CheckResultsSurviveRestart(t *testing.T) {
	if fp := rawexec.New(rawexec.Config{Enabled: true}).Fingerprint(); fp.Health != drivers.HealthHealthy {
		if os.Getenv("CI") != "" {
			t.Fatalf("raw_exec unhealthy in CI: %s", fp.HealthDescription)
		}
		t.Skipf("raw_exec not healthy here: %s", fp.HealthDescription)
	}
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

	dir := t.TempDir()
	srv := newFakeServer()
	start := func() *Client {
		c, err := New(Config{Name: "checks-node", DataDir: dir, RPC: srv, Version: "0.1.0", MaxKillTimeout: 2 * time.Second,
			Drivers: []drivers.Driver{rawexec.New(rawexec.Config{Enabled: true})},
			Logger:  hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: testWriter{t}})})
		if err != nil {
			t.Fatal(err)
		}
		c.Start()
		return c
	}
	c1 := start()
	cur := c1
	t.Cleanup(func() { cur.Leave(); cur.Shutdown() })
	tc := &testClient{Client: c1, srv: srv}
	tc.waitReady(t)

	a := testutil.Alloc(structs.JobTypeService, &structs.Task{Name: "web", Driver: "raw_exec", KillTimeout: time.Second,
		Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "while :; do sleep 0.05; done"}}})
	a.NodeID = c1.NodeID()
	a.AllocatedResources = &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: structs.AllocatedPorts{{Label: "http", Value: port, HostIP: host}}}}
	a.Job.TaskGroups[0].Services = []*structs.Service{{Name: "web", Provider: "nomad", PortLabel: "http",
		Checks: []structs.ServiceCheck{{Name: "alive", Type: "http", Path: "/", Interval: 100 * time.Millisecond, Timeout: time.Minute}}}}
	srv.upsertAlloc(a)
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

	c2 := start()
	cur = c2
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
