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
	c.allocMu.Lock()
	prev := c.allocs[a.PreviousAllocation]
	token := c.migrateTokens[a.ID]
	delete(c.migrateTokens, a.ID)
	c.allocMu.Unlock()
	if prev == nil {
		// On another node: fetched from there when the group migrates
		// and the servers gave a token (they do when the previous
		// allocation ran elsewhere).
		if !tg.EphemeralDisk.Migrate || token == "" {
			return nil
		}
		return &remotePrevAlloc{c: c, allocID: a.PreviousAllocation, token: token}
	}
	return &allocrunner.LocalPrevAlloc{
		AllocID: a.PreviousAllocation,
		Dir:     filepath.Join(c.cfg.AllocDir, a.PreviousAllocation),
		Done:    prev.WaitCh(),
	}
}

// keepMigrateTokens remembers the pull's migrate tokens until their
// allocations start.
func (c *Client) keepMigrateTokens(tokens map[string]string) {
	if len(tokens) == 0 {
		return
	}
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	if c.migrateTokens == nil {
		c.migrateTokens = make(map[string]string)
	}
	for id, t := range tokens {
		c.migrateTokens[id] = t
	}
}
