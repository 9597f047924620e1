package client

import (
	"os"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/rawexec"
	"github.com/hashicorp/go-hclog"
)

// requireRawExec ends the test when the raw_exec driver is not healthy
// here: failed when CI is set, skipped elsewhere.
func requireRawExec(t *testing.T) {
	t.Helper()
	if fp := rawexec.New(rawexec.Config{Enabled: true}).Fingerprint(); fp.Health != drivers.HealthHealthy {
		if os.Getenv("CI") != "" {
			t.Fatalf("raw_exec unhealthy in CI: %s", fp.HealthDescription)
		}
		t.Skipf("raw_exec not healthy here: %s", fp.HealthDescription)
	}
}

// restartableClient is a non-dev client (raw_exec only) on a data dir that
// outlives it, for the restore tests: restart starts the next client
// process on the same dir, as after an agent restart. The embedded
// testClient always holds the latest client; the test's cleanup makes the
// latest one leave and shut down, so nothing a failed run started is left.
type restartableClient struct {
	*testClient
	dir   string
	start func() *Client
	// driver makes each client process's raw_exec driver (a test may
	// change it before a restart).
	driver func() drivers.Driver
}

// newRestartableClient requires raw_exec, starts the first client (named
// name, logging at level) and waits until the fake server has it ready.
func newRestartableClient(t *testing.T, name string, level hclog.Level) *restartableClient {
	t.Helper()
	requireRawExec(t)
	r := &restartableClient{dir: t.TempDir(), driver: func() drivers.Driver { return rawexec.New(rawexec.Config{Enabled: true}) }}
	srv := newFakeServer()
	r.start = func() *Client {
		c, err := New(Config{
			Name: name, DataDir: r.dir, RPC: srv, Version: "0.1.0", MaxKillTimeout: 2 * time.Second,
			// Each client process has its own driver instance.
			Drivers: []drivers.Driver{r.driver()},
			Logger:  hclog.New(&hclog.LoggerOptions{Level: level, Output: testWriter{t}}),
		})
		if err != nil {
			t.Fatal(err)
		}
		c.Start()
		return c
	}
	r.testClient = &testClient{Client: r.start(), srv: srv}
	t.Cleanup(func() { r.Client.Leave(); r.Client.Shutdown() })
	r.waitReady(t)
	return r
}

// restart starts the next client on the same data dir (the test shuts
// the previous one down first) and makes it the current one.
func (r *restartableClient) restart() *Client {
	r.Client = r.start()
	return r.Client
}
