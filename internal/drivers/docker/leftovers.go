package docker

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/drover-project/drover/internal/atomicfile"
)

// Leftovers are containers the driver let go of but could not remove at
// the time, because the engine did not answer: the container of a task
// destroyed while the engine was down, of a task whose recovery failed
// (the task runner then forgets the handle: the contract says a failed
// recover released what the task left), or of a start that failed half
// way. They are removed (killed first if they still run: with
// live-restore a recovered task's container outlives the engine's
// restart and holds its published ports) when the engine answers a
// fingerprint again. Each holds one reference on its image, released when
// it is removed, so gc.image removes an image only once no leftover uses
// it.
//
// With a state directory (the client's) they are also written to a file
// there, so a leftover recorded before an agent restart is still removed
// after it. A sweep by label at startup was the alternative, rejected: the
// client restores its tasks after the first fingerprint (a container
// exited while no client ran is recovered for its exit code, so removing
// it would rerun a finished batch task), gc.container = false keeps exited
// containers on purpose, and other agents (and test runs) on the same
// engine own containers with the same labels.

// leftover is one container (or a task's containers) to remove.
type leftover struct {
	// Image is the reference the leftover holds on its image ("": none).
	Image string `json:",omitempty"`
}

// leftoverFile is the persisted form.
type leftoverFile struct {
	// Containers by container ID.
	Containers map[string]leftover `json:",omitempty"`
	// Tasks by task ID: the containers carrying the task's ID label (a
	// task whose handle had no container ID, stored before its start
	// returned).
	Tasks map[string]leftover `json:",omitempty"`
}

// leftoverPath is the file the leftovers are kept in ("": memory only).
func (d *Driver) leftoverPath() string {
	if d.stateDir == "" {
		return ""
	}
	return filepath.Join(d.stateDir, d.flavor.name()+"-leftovers.json")
}

// loadLeftovers reads what an earlier process recorded (New calls it).
func (d *Driver) loadLeftovers() {
	p := d.leftoverPath()
	if p == "" {
		return
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var f leftoverFile
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		d.logger.Warn("cannot read the leftover containers of an earlier run; they stay", "path", p, "error", err)
		return
	}
	for id, l := range f.Containers {
		d.leftovers[id] = l
		d.images.adopt(l.Image)
	}
	for id, l := range f.Tasks {
		d.taskLeftovers[id] = l
		d.images.adopt(l.Image)
	}
	if n := len(f.Containers) + len(f.Tasks); n > 0 {
		d.logger.Info("containers left by an earlier run are removed when the engine answers", "count", n)
	}
}

// saveLeftoversLocked writes the leftovers (d.mu held, so writes happen in
// the order of the changes).
func (d *Driver) saveLeftoversLocked() {
	p := d.leftoverPath()
	if p == "" {
		return
	}
	if len(d.leftovers) == 0 && len(d.taskLeftovers) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.logger.Warn("cannot remove the leftover file", "path", p, "error", err)
		}
		return
	}
	b, err := json.Marshal(leftoverFile{Containers: d.leftovers, Tasks: d.taskLeftovers})
	if err == nil {
		err = atomicfile.Write(p, b, 0o600)
	}
	if err != nil {
		d.logger.Warn("cannot record the leftover containers; an agent restart forgets them", "path", p, "error", err)
	}
}

// queueLeftover records container id for removal; the caller hands over
// one reference on image.
func (d *Driver) queueLeftover(id, image string) {
	d.mu.Lock()
	_, dup := d.leftovers[id]
	if !dup {
		d.leftovers[id] = leftover{Image: image}
		d.saveLeftoversLocked()
	}
	d.mu.Unlock()
	if dup {
		d.images.release(image)
	}
}

// queueTaskLeftover records the containers of task taskID (by label) for
// removal; the caller hands over one reference on image.
func (d *Driver) queueTaskLeftover(taskID, image string) {
	d.mu.Lock()
	_, dup := d.taskLeftovers[taskID]
	if !dup {
		d.taskLeftovers[taskID] = leftover{Image: image}
		d.saveLeftoversLocked()
	}
	d.mu.Unlock()
	if dup {
		d.images.release(image)
	}
}

// dropLeftover forgets a leftover (removed, or recovered after all) and
// releases its image reference.
func (d *Driver) dropLeftover(id string) {
	d.mu.Lock()
	l, ok := d.leftovers[id]
	if ok {
		delete(d.leftovers, id)
		d.saveLeftoversLocked()
	}
	d.mu.Unlock()
	if ok {
		d.images.release(l.Image)
	}
}

func (d *Driver) dropTaskLeftover(taskID string) {
	d.mu.Lock()
	l, ok := d.taskLeftovers[taskID]
	if ok {
		delete(d.taskLeftovers, taskID)
		d.saveLeftoversLocked()
	}
	d.mu.Unlock()
	if ok {
		d.images.release(l.Image)
	}
}

func (d *Driver) hasTaskLeftover(taskID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.taskLeftovers[taskID]
	return ok
}

// sweepLeftovers removes the leftovers; the fingerprint calls it whenever
// the engine answers. A container already gone counts as removed; one the
// engine fails to remove is tried again at the next fingerprint. It holds
// sweepMu: a recovery in progress (which may re-attach to a leftover)
// never sees its container removed under it.
func (d *Driver) sweepLeftovers(cli *client.Client) {
	d.sweepMu.Lock()
	defer d.sweepMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), fingerprintTimeout)
	defer cancel()
	d.mu.Lock()
	ids := make([]string, 0, len(d.leftovers))
	for id := range d.leftovers {
		ids = append(ids, id)
	}
	tasks := make([]string, 0, len(d.taskLeftovers))
	for id := range d.taskLeftovers {
		tasks = append(tasks, id)
	}
	d.mu.Unlock()
	for _, id := range ids {
		err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !errdefs.IsNotFound(err) {
			d.logger.Debug("leftover container not removed yet", "container", shortID(id), "error", err)
			continue
		}
		d.logger.Debug("leftover container removed", "container", shortID(id))
		d.dropLeftover(id)
	}
	for _, id := range tasks {
		if err := d.sweepTaskLocked(ctx, cli, id); err != nil {
			d.logger.Debug("leftover containers of a task not removed yet", "task", id, "error", err)
		}
	}
}

// sweepTaskLocked removes the containers labelled with task taskID, a
// leftover (sweepMu held for writing: no start or recovery of the task
// runs meanwhile).
func (d *Driver) sweepTaskLocked(ctx context.Context, cli *client.Client, taskID string) error {
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", labelTaskID+"="+taskID))})
	if err != nil {
		return err
	}
	for _, c := range cs {
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !errdefs.IsNotFound(err) {
			return err
		}
		d.logger.Debug("leftover container removed", "task", taskID, "container", shortID(c.ID))
	}
	d.dropTaskLeftover(taskID)
	return nil
}

// containerMayRemain reports an engine call that failed without the engine
// saying the container is gone (it is down, hung, or failed): the
// container may still exist, and run.
func containerMayRemain(err error) bool {
	return err != nil && !errdefs.IsNotFound(err)
}
