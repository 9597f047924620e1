package allocrunner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/drover-project/drover/internal/structs"
)

// PrevAlloc is the allocation a new one replaces (its PreviousAllocation),
// as this client reaches it. A group whose ephemeral disk is sticky waits
// for it to be terminal and then takes over its data: alloc/data and each
// task's local/ directory.
type PrevAlloc interface {
	// ID is the previous allocation's ID.
	ID() string
	// Wait blocks until the previous allocation is terminal; it returns
	// early (false) once stop closes.
	Wait(stop <-chan struct{}) bool
	// Move puts the previous allocation's alloc/data and the named tasks'
	// local/ directories into the allocation directory dst, replacing the
	// empty ones there. What is missing in the previous allocation is
	// skipped.
	Move(dst string, tasks []string) error
}

// LocalPrevAlloc is a previous allocation on this node: Done closes when
// its runner has ended, Dir is its allocation directory.
type LocalPrevAlloc struct {
	AllocID string
	Dir     string
	Done    <-chan struct{}
}

// ID implements PrevAlloc.
func (p *LocalPrevAlloc) ID() string { return p.AllocID }

// Wait implements PrevAlloc.
func (p *LocalPrevAlloc) Wait(stop <-chan struct{}) bool {
	if p.Done == nil {
		return true
	}
	select {
	case <-p.Done:
		return true
	case <-stop:
		return false
	}
}

// Move implements PrevAlloc: the directories are renamed (the previous and
// the new allocation directories share the client's alloc root).
func (p *LocalPrevAlloc) Move(dst string, tasks []string) error {
	return MoveAllocData(p.Dir, dst, tasks)
}

// MoveAllocData renames src's alloc/data and each task's local/ onto the
// same paths under dst (replacing dst's, which are expected empty).
// Directories src lacks are skipped; a symlink in their place is refused.
func MoveAllocData(src, dst string, tasks []string) error {
	rels := []string{filepath.Join("alloc", "data")}
	for _, t := range tasks {
		rels = append(rels, filepath.Join(t, "local"))
	}
	for _, rel := range rels {
		from, to := filepath.Join(src, rel), filepath.Join(dst, rel)
		fi, err := os.Lstat(from)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			continue // not a directory (a symlink or a file): never followed
		}
		if err := os.RemoveAll(to); err != nil {
			return fmt.Errorf("replace %s: %w", rel, err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.Rename(from, to); err != nil {
			return fmt.Errorf("move %s: %w", rel, err)
		}
	}
	return nil
}

// Task event messages of the previous-allocation step.
const (
	msgWaitPrev     = "Waiting for previous allocation %s to terminate"
	msgMigratePrev  = "Migrating data from previous allocation %s"
	msgMigratedPrev = "Migrated data from previous allocation %s"
	msgMigrateFail  = "Failed to migrate data from previous allocation %s (starting with an empty directory): %v"
)

// takeOverPrev waits for the previous allocation and moves its data in
// (a sticky ephemeral disk). A failed move is reported and the allocation
// starts with what it has: the data is a best effort, as in Nomad. It
// returns false when the runner was killed or detached while waiting.
func (ar *AllocRunner) takeOverPrev(tasks []string) bool {
	p := ar.cfg.PrevAlloc
	if p == nil {
		return true
	}
	short := shortID(p.ID())
	ar.emitAll(structs.TaskSetup, fmt.Sprintf(msgWaitPrev, short))
	stop := make(chan struct{})
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ar.killCh:
		case <-ar.detachCh:
		case <-done:
			return
		}
		close(stop)
	}()
	if !p.Wait(stop) {
		return false
	}
	ar.emitAll(structs.TaskSetup, fmt.Sprintf(msgMigratePrev, short))
	allocDir := filepath.Join(ar.cfg.AllocRoot, ar.cfg.Alloc.ID)
	if err := p.Move(allocDir, tasks); err != nil {
		ar.logger.Warn("failed to migrate data from the previous allocation", "previous_alloc", p.ID(), "error", err)
		ar.emitAll(structs.TaskSetup, fmt.Sprintf(msgMigrateFail, short, err))
		return true
	}
	ar.emitAll(structs.TaskSetup, fmt.Sprintf(msgMigratedPrev, short))
	return true
}

func (ar *AllocRunner) emitAll(typ, msg string) {
	for _, e := range ar.tasks {
		e.tr.EmitEvent(e.tr.NewEvent(typ, msg))
	}
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
