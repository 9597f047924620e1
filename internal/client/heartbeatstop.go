package client

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/structs"
)

// The client's side of disconnect.stop_on_client_after (and the older
// stop_after_client_disconnect): a client that has not heartbeated
// successfully for that long stops the group's allocations itself, since
// the servers have marked them lost and replaced them elsewhere (they wait
// for this stop before placing the replacement). It is also checked when a
// client restores after a restart: allocations of a client that was away
// longer than their window are stopped, not re-attached and left running.

// heartbeatStopTick is how often the client compares its last successful
// heartbeat with the allocations' windows.
const heartbeatStopTick = 250 * time.Millisecond

// lastHeartbeatFile holds the time of the last successful heartbeat (Unix
// nanoseconds), so that a restarted client knows how long it was away.
const lastHeartbeatFile = "last-heartbeat"

// heartbeatStop tracks the last successful heartbeat.
type heartbeatStop struct {
	mu     sync.Mutex
	lastOK time.Time
	path   string // "" in dev mode: nothing is persisted
	saved  time.Time
}

// newHeartbeatStop starts from the last heartbeat a previous client
// process recorded, or from now (a fresh client counts from its start).
func newHeartbeatStop(stateDir string, devMode bool, now time.Time) *heartbeatStop {
	h := &heartbeatStop{lastOK: now}
	if devMode {
		return h
	}
	h.path = filepath.Join(stateDir, lastHeartbeatFile)
	if b, err := os.ReadFile(h.path); err == nil {
		if ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && ns > 0 {
			h.lastOK = time.Unix(0, ns)
			h.saved = h.lastOK
		}
	}
	return h
}

// ok records a successful heartbeat (or registration). The file is
// rewritten at most once a second.
func (h *heartbeatStop) ok(now time.Time) {
	h.mu.Lock()
	h.lastOK = now
	persist := h.path != "" && now.Sub(h.saved) >= time.Second
	if persist {
		h.saved = now
	}
	h.mu.Unlock()
	if persist {
		tmp := h.path + ".tmp"
		if os.WriteFile(tmp, []byte(strconv.FormatInt(now.UnixNano(), 10)), 0o600) == nil {
			_ = os.Rename(tmp, h.path)
		}
	}
}

func (h *heartbeatStop) last() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastOK
}

// stopOnClientAfter is the group's window, 0 when it has none.
func stopOnClientAfter(a *structs.Allocation) time.Duration {
	if a == nil || a.Job == nil {
		return 0
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return 0
	}
	if tg.Disconnect != nil && tg.Disconnect.StopOnClientAfter != nil {
		return *tg.Disconnect.StopOnClientAfter
	}
	if tg.StopAfterClientDisconnect != nil {
		return *tg.StopAfterClientDisconnect
	}
	return 0
}

// watchHeartbeatStop checks the windows until the client shuts down.
func (c *Client) watchHeartbeatStop() {
	t := time.NewTicker(heartbeatStopTick)
	defer t.Stop()
	for {
		select {
		case <-c.shutdownCh:
			return
		case <-t.C:
			c.stopSilentAllocs()
		}
	}
}

// stopSilentAllocs stops every live allocation whose group's
// stop_on_client_after has passed since the last successful heartbeat.
func (c *Client) stopSilentAllocs() {
	last := c.hbStop.last()
	silent := c.now().Sub(last)
	for _, ar := range c.runners() {
		a := ar.Alloc()
		d := stopOnClientAfter(a)
		if d <= 0 || silent <= d || a.ServerTerminalStatus() || a.ClientTerminalStatus() || ar.Killed() {
			continue
		}
		c.logger.Warn("stopping allocation: no successful heartbeat within its stop_on_client_after",
			"alloc_id", a.ID, "stop_on_client_after", d, "last_heartbeat", last)
		stopSilent(ar, d)
	}
}

func stopSilent(ar *allocrunner.AllocRunner, d time.Duration) {
	ar.Kill("client has not heartbeated successfully for longer than its disconnect.stop_on_client_after (" + d.String() + ")")
}
