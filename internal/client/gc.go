package client

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/structs"
)

// GCConfig is the client's garbage collection of finished allocations,
// with Nomad's keys and defaults (client.gc_interval, ...). A finished
// allocation's runner and alloc dir (logs, local files) stay on the node,
// for `alloc logs` and `alloc fs`, until one of these collects it or the
// servers garbage collect the allocation itself.
type GCConfig struct {
	// Interval is how often the client checks (gc_interval, 1m).
	Interval time.Duration
	// DiskUsageThreshold is the alloc dir's file system usage, in percent,
	// above which finished allocations are removed, oldest first, until it
	// is below (gc_disk_usage_threshold, 80).
	DiskUsageThreshold float64
	// InodeUsageThreshold: the same for inodes (gc_inode_usage_threshold, 70).
	InodeUsageThreshold float64
	// MaxAllocs is how many allocations (running or finished) the client
	// keeps before removing finished ones, oldest first (gc_max_allocs, 50);
	// checked every second, not only every Interval.
	MaxAllocs int
	// ParallelDestroys bounds the allocations destroyed at once
	// (gc_parallel_destroys, 2).
	ParallelDestroys int
}

// Nomad's defaults.
const (
	DefaultGCInterval            = time.Minute
	DefaultGCDiskUsageThreshold  = 80
	DefaultGCInodeUsageThreshold = 70
	DefaultGCMaxAllocs           = 50
	DefaultGCParallelDestroys    = 2
)

func (g *GCConfig) fill() {
	if g.Interval <= 0 {
		g.Interval = DefaultGCInterval
	}
	if g.DiskUsageThreshold <= 0 {
		g.DiskUsageThreshold = DefaultGCDiskUsageThreshold
	}
	if g.InodeUsageThreshold <= 0 {
		g.InodeUsageThreshold = DefaultGCInodeUsageThreshold
	}
	if g.MaxAllocs <= 0 {
		g.MaxAllocs = DefaultGCMaxAllocs
	}
	if g.ParallelDestroys <= 0 {
		g.ParallelDestroys = DefaultGCParallelDestroys
	}
}

// gcCountCheck is how often the allocation count is checked against
// MaxAllocs between full passes (a count is one map length under a read
// lock), so a burst of new allocations makes room within a second, as
// Nomad does before running them.
const gcCountCheck = time.Second

// runGC collects on every interval until shutdown, and between intervals
// whenever the node holds more than MaxAllocs allocations.
func (c *Client) runGC() {
	cfg := c.gcConfig()
	full := time.NewTicker(cfg.Interval)
	defer full.Stop()
	count := time.NewTicker(min(gcCountCheck, cfg.Interval))
	defer count.Stop()
	for {
		select {
		case <-c.shutdownCh:
			return
		case <-full.C:
			c.gcPass(cfg)
		case <-count.C:
			c.allocMu.RLock()
			over := len(c.allocs) > cfg.MaxAllocs
			c.allocMu.RUnlock()
			if over {
				c.gcPass(cfg)
			}
		}
	}
}

func (c *Client) gcConfig() GCConfig {
	cfg := c.cfg.GC
	cfg.fill()
	return cfg
}

// gcPass removes finished allocations, oldest first, while the node holds
// more than MaxAllocs or its alloc dir's file system is fuller than a
// threshold.
func (c *Client) gcPass(cfg GCConfig) {
	done := c.finishedRunners()
	c.allocMu.RLock()
	total := len(c.allocs)
	c.allocMu.RUnlock()
	var victims []*allocrunner.AllocRunner
	for len(done) > 0 && total > cfg.MaxAllocs {
		victims, done, total = append(victims, done[0]), done[1:], total-1
	}
	c.destroyRunners(victims, cfg.ParallelDestroys, "max allocations")
	for len(done) > 0 {
		disk, inodes, err := fsUsage(c.cfg.AllocDir)
		if err != nil {
			c.logger.Warn("garbage collection: cannot read alloc dir usage", "error", err)
			return
		}
		if disk <= cfg.DiskUsageThreshold && inodes <= cfg.InodeUsageThreshold {
			return
		}
		c.destroyRunners(done[:1], 1, fmt.Sprintf("disk usage %.0f%%, inode usage %.0f%%", disk, inodes))
		done = done[1:]
	}
}

// finishedRunners returns the runners whose tasks are all done for good and
// whose allocation is terminal on the client, oldest finish first.
func (c *Client) finishedRunners() []*allocrunner.AllocRunner {
	c.allocMu.RLock()
	runners := make([]*allocrunner.AllocRunner, 0, len(c.allocs))
	for _, ar := range c.allocs {
		runners = append(runners, ar)
	}
	c.allocMu.RUnlock()
	type fin struct {
		ar *allocrunner.AllocRunner
		at time.Time
	}
	var out []fin
	for _, ar := range runners {
		if at, ok := runnerFinished(ar); ok {
			out = append(out, fin{ar, at})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].at.Equal(out[j].at) {
			return out[i].at.Before(out[j].at)
		}
		return out[i].ar.ID() < out[j].ar.ID()
	})
	res := make([]*allocrunner.AllocRunner, len(out))
	for i, f := range out {
		res[i] = f.ar
	}
	return res
}

// runnerFinished reports whether ar is done for good, and when its last
// task finished.
func runnerFinished(ar *allocrunner.AllocRunner) (time.Time, bool) {
	select {
	case <-ar.WaitCh():
	default:
		return time.Time{}, false
	}
	a := ar.Alloc()
	if !a.ClientTerminalStatus() {
		return time.Time{}, false
	}
	var last time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.After(last) {
			last = ts.FinishedAt
		}
	}
	return last, true
}

// destroyRunners removes runners from the client and destroys them (alloc
// dirs removed), at most parallel at once. Their final states, already
// queued, still reach the servers; the allocation stays known by its
// index, so a later pull does not run it again.
func (c *Client) destroyRunners(runners []*allocrunner.AllocRunner, parallel int, reason string) int {
	if len(runners) == 0 {
		return 0
	}
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	n := 0
	for _, ar := range runners {
		c.allocMu.Lock()
		if c.allocs[ar.ID()] != ar {
			c.allocMu.Unlock()
			continue
		}
		delete(c.allocs, ar.ID())
		c.allocMu.Unlock()
		n++
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := ar.Destroy(); err != nil {
				c.logger.Warn("garbage collection: failed to destroy allocation", "alloc_id", ar.ID(), "error", err)
				return
			}
			// Gone from the client's state too: a restart must not bring it
			// back (the servers' terminal copy is never run again).
			if err := c.state.DeleteAlloc(ar.ID()); err != nil {
				c.logger.Warn("garbage collection: failed to remove allocation from client state", "alloc_id", ar.ID(), "error", err)
			}
			c.logger.Info("garbage collected allocation", "alloc_id", ar.ID(), "reason", reason)
		}()
	}
	wg.Wait()
	return n
}

// CollectAll destroys every finished allocation of this node now
// (`/v1/client/gc`) and returns how many.
func (c *Client) CollectAll() int {
	return c.destroyRunners(c.finishedRunners(), c.gcConfig().ParallelDestroys, "forced")
}

// CollectAlloc destroys one finished allocation now
// (`/v1/client/allocation/<id>/gc`): 404 if this node does not hold it,
// 400 if it is still running.
func (c *Client) CollectAlloc(allocID string) error {
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return err
	}
	if _, ok := runnerFinished(ar); !ok {
		return structs.NewErrCoded(http.StatusBadRequest, "allocation %s is not terminal: stop it first", allocID)
	}
	if c.destroyRunners([]*allocrunner.AllocRunner{ar}, 1, "forced") == 0 {
		return structs.NewErrCoded(http.StatusNotFound, "unknown allocation ID %q", allocID)
	}
	return nil
}

// fsUsage reads the alloc dir's file system usage (tests replace it).
var fsUsage = statfsUsage

// statfsUsage returns the used percentage of the file system holding dir,
// of its blocks and of its inodes (0 when it reports none).
func statfsUsage(dir string) (disk, inodes float64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	if st.Blocks == 0 {
		return 0, 0, errors.New("file system reports no blocks")
	}
	disk = 100 * float64(st.Blocks-st.Bfree) / float64(st.Blocks)
	if st.Files > 0 {
		inodes = 100 * float64(st.Files-st.Ffree) / float64(st.Files)
	}
	return disk, inodes, nil
}
