package client

import (
	"path/filepath"

	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/structs"
)

// prevAllocOf is the previous allocation whose data a new allocation takes
// over, or nil: only a group whose ephemeral disk is sticky (or migrates)
// takes it, and only from a previous allocation this client ran.
func (c *Client) prevAllocOf(a *structs.Allocation) allocrunner.PrevAlloc {
	if a.PreviousAllocation == "" || a.Job == nil {
		return nil
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil || !tg.EphemeralDisk.StickyOrMigrate() {
		return nil
	}
	c.allocMu.RLock()
	prev := c.allocs[a.PreviousAllocation]
	c.allocMu.RUnlock()
	if prev == nil {
		return nil
	}
	return &allocrunner.LocalPrevAlloc{
		AllocID: a.PreviousAllocation,
		Dir:     filepath.Join(c.cfg.AllocDir, a.PreviousAllocation),
		Done:    prev.WaitCh(),
	}
}
