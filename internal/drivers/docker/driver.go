package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/drivers"
)

// handleVersion is the version of the DriverState format.
const handleVersion = 1

// fingerprintTimeout bounds one fingerprint's calls to the engine.
const fingerprintTimeout = 5 * time.Second

// slowFingerprintsTolerated is how many fingerprints in a row a healthy
// engine may fail by not answering in time (not by refusing the
// connection) before the driver says it is unhealthy.
const slowFingerprintsTolerated = 1

// Config is the driver's configuration.
type Config struct {
	Plugin PluginConfig
	Logger hclog.Logger
	// Flavor is the engine (zero: Docker).
	Flavor Flavor
	// StateDir is a directory the driver may keep state in across agent
	// restarts (the client's state dir): the containers it still has to
	// remove. Empty: it keeps them in memory only.
	StateDir string
}

// Driver is the docker driver. It is safe for concurrent use.
type Driver struct {
	cfg    PluginConfig
	logger hclog.Logger
	flavor Flavor

	cliOnce sync.Once
	cli     *client.Client
	cliErr  error

	images *imageRefs

	stateDir string

	mu       sync.Mutex
	tasks    map[string]*taskHandle
	detected bool // the engine answered at least once
	// lastAttrs are the attributes of the last healthy fingerprint, for the
	// keys an optional call gives when that call fails (carryAttributes).
	lastAttrs map[string]string
	// slowFingerprints counts the fingerprints in a row the engine did not
	// answer in time since it was last healthy.
	slowFingerprints int
	// fingerprintTimeout bounds one fingerprint (tests shorten it).
	fingerprintTimeout time.Duration
	// leftovers (by container ID) and taskLeftovers (by task ID label) are
	// containers the driver let go of but the engine did not remove at the
	// time; removed when it answers again (leftovers.go).
	leftovers     map[string]leftover
	taskLeftovers map[string]leftover
	// sweepMu: the sweep of leftovers holds it, a recovery holds it for
	// reading (it may re-attach to a container queued by an earlier one).
	sweepMu sync.RWMutex
	// callTimeout bounds each engine call of a task's stop and of the
	// clean-up after a failed start (tests shorten it).
	callTimeout time.Duration
	// startTimeout bounds a start's create, start and inspect calls.
	startTimeout time.Duration
}

var (
	_ drivers.Driver        = (*Driver)(nil)
	_ drivers.CpusetUpdater = (*Driver)(nil)
)

// New returns a driver; it does not contact the engine until used.
func New(cfg Config) *Driver {
	l := cfg.Logger
	if l == nil {
		l = hclog.NewNullLogger()
	}
	if cfg.Plugin.PluginName == "" {
		cfg.Plugin.PluginName = cfg.Flavor.name()
	}
	d := &Driver{cfg: cfg.Plugin, flavor: cfg.Flavor, logger: l.Named(cfg.Flavor.name()), stateDir: cfg.StateDir,
		tasks: map[string]*taskHandle{}, leftovers: map[string]leftover{}, taskLeftovers: map[string]leftover{},
		callTimeout: 30 * time.Second, startTimeout: 2 * time.Minute, fingerprintTimeout: fingerprintTimeout}
	if cfg.Plugin.FingerprintTimeout > 0 {
		d.fingerprintTimeout = cfg.Plugin.FingerprintTimeout
	}
	d.images = newImageRefs(d)
	d.loadLeftovers()
	return d
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return d.flavor.name() }

// client returns the engine client (created once). The API version is
// negotiated on first use: the engine may be older than the SDK.
func (d *Driver) client() (*client.Client, error) {
	d.cliOnce.Do(func() {
		opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
		if d.flavor.Podman {
			// DOCKER_HOST names Docker's engine, never podman's.
			opts = []client.Opt{client.WithAPIVersionNegotiation()}
		}
		if d.cfg.Endpoint != "" {
			opts = append(opts, client.WithHost(d.cfg.Endpoint))
		}
		if d.cfg.TLSCert != "" || d.cfg.TLSKey != "" || d.cfg.TLSCA != "" {
			opts = append(opts, client.WithTLSClientConfig(d.cfg.TLSCA, d.cfg.TLSCert, d.cfg.TLSKey))
		}
		d.cli, d.cliErr = client.NewClientWithOpts(opts...)
	})
	return d.cli, d.cliErr
}

func (d *Driver) endpoint() string {
	if d.cli != nil {
		return d.cli.DaemonHost()
	}
	if d.cfg.Endpoint != "" {
		return d.cfg.Endpoint
	}
	return client.DefaultDockerHost
}

// engineName is how messages name the engine.
func (d *Driver) engineName() string {
	if d.flavor.Podman {
		return "podman API service"
	}
	return "docker daemon"
}

// Fingerprint implements drivers.Driver. An engine that never answered is
// "undetected" (no docker on this node); one that answered before and no
// longer does is "unhealthy", and the node says why. A healthy engine that
// once does not answer in time (a loaded host) stays healthy with its last
// attributes: an engine that is gone refuses the connection, and a driver
// flipping to unhealthy and back re-registers the node twice and keeps new
// work off it meanwhile.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	ctx, cancel := context.WithTimeout(context.Background(), d.fingerprintTimeout)
	defer cancel()
	cli, err := d.client()
	if err == nil {
		_, err = cli.Ping(ctx)
	}
	var v struct {
		Version, APIVersion, OS string
	}
	if err == nil {
		ver, verr := cli.ServerVersion(ctx)
		err = verr
		v.Version, v.APIVersion, v.OS = ver.Version, ver.APIVersion, ver.Os
	}
	d.mu.Lock()
	wasDetected := d.detected
	if err == nil {
		d.detected = true
		d.slowFingerprints = 0
	} else if isTimeout(err) && d.lastAttrs != nil && d.slowFingerprints < slowFingerprintsTolerated {
		d.slowFingerprints++
		last := maps.Clone(d.lastAttrs)
		d.mu.Unlock()
		d.logger.Warn("engine did not answer the fingerprint in time; keeping it healthy until the next one", "error", err)
		return &drivers.Fingerprint{Attributes: last, Health: drivers.HealthHealthy, HealthDescription: "Healthy"}
	} else {
		// Unhealthy now: its attributes are gone from the node, and the
		// next healthy fingerprint starts afresh.
		d.lastAttrs = nil
	}
	d.mu.Unlock()
	if err != nil {
		health := drivers.HealthUndetected
		if wasDetected {
			health = drivers.HealthUnhealthy
		}
		return &drivers.Fingerprint{
			Attributes:        map[string]string{},
			Health:            health,
			HealthDescription: fmt.Sprintf("Failed to connect to %s at %s: %v", d.engineName(), d.endpoint(), err),
		}
	}
	var attrs map[string]string
	if d.flavor.Podman {
		attrs = d.podmanAttributes(ctx, cli, v.Version, v.APIVersion)
	} else {
		attrs = d.dockerAttributes(ctx, cli, v.Version, v.APIVersion, v.OS)
	}
	d.mu.Lock()
	d.lastAttrs = attrs
	d.mu.Unlock()
	// After the attributes, on its own deadline: slow removals never cost
	// the node its attributes.
	d.sweepLeftovers(cli)
	return &drivers.Fingerprint{Attributes: maps.Clone(attrs), Health: drivers.HealthHealthy, HealthDescription: "Healthy"}
}

// isTimeout says an engine call failed for want of an answer in time, not
// because the engine refused or answered with an error.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// driverState is what the client persists for recovery.
type driverState struct {
	ContainerID string
	Image       string
	ImageID     string
	StartedAt   time.Time
}

// StartTask implements drivers.Driver: image, container, start, and the
// goroutines that wait on it and stream its output.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("task config with an ID is required")
	}
	d.mu.Lock()
	_, dup := d.tasks[cfg.ID]
	d.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("task %q is already started", cfg.ID)
	}
	tc, err := d.flavor.parseTask(cfg.Config)
	if err != nil {
		return nil, err
	}
	if tc.ImageFromLoad {
		if tc.Image, err = archiveImageRef(cfg.TaskDir, tc.Load); err != nil {
			return nil, err
		}
	}
	cli, err := d.client()
	if err != nil {
		return nil, fmt.Errorf("%s client: %w", d.Name(), err)
	}
	imageID, err := d.images.acquire(cli, cfg, tc)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			d.images.release(tc.Image)
		}
	}()
	spec, err := buildCreateSpec(&d.cfg, d.flavor, cfg, tc, tc.Image)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.startTimeout)
	defer cancel()
	if d.hasTaskLeftover(cfg.ID) {
		// An earlier run of the task, known by its label only, is queued
		// for removal: remove it now, as the sweep would later remove any
		// container with the task's label, the new one too.
		d.sweepMu.Lock()
		err := d.sweepTaskLocked(ctx, cli, cfg.ID)
		d.sweepMu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("remove the task's earlier container: %w", err)
		}
	}
	id, err := d.createContainer(ctx, cli, spec)
	if err != nil {
		if ctx.Err() != nil {
			// The engine did not answer in time: it may have created the
			// container all the same, known by its label only.
			d.images.adopt(tc.Image)
			d.queueTaskLeftover(cfg.ID, tc.Image)
		}
		return nil, err
	}
	if err := cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		d.removeFailedStart(cli, id, tc.Image)
		return nil, fmt.Errorf("start container: %w", err)
	}
	info, err := cli.ContainerInspect(ctx, id)
	if err != nil {
		d.removeFailedStart(cli, id, tc.Image)
		return nil, fmt.Errorf("inspect container: %w", err)
	}
	ds := driverState{ContainerID: id, Image: tc.Image, ImageID: imageID, StartedAt: parseTime(info.State.StartedAt)}
	h := newHandle(d, cli, cfg, ds, tc.TTY)
	h.run(time.Time{})
	state, err := json.Marshal(ds)
	if err != nil {
		return nil, err
	}
	started = true
	d.mu.Lock()
	d.tasks[cfg.ID] = h
	d.mu.Unlock()
	d.logger.Debug("container started", "task", cfg.ID, "container", id[:12], "image", tc.Image)
	return &drivers.TaskHandle{Version: handleVersion, Config: cfg, State: drivers.TaskStateRunning, DriverState: state}, nil
}

// removeFailedStart removes the container of a failed start, within the
// call bound: an engine that stopped answering made the start fail, and an
// unbounded removal hung the start (and the task's kill) for good. A
// container the engine did not remove is queued as a leftover (holding a
// reference on image, so gc.image waits for it).
func (d *Driver) removeFailedStart(cli *client.Client, id, image string) {
	ctx, cancel := context.WithTimeout(context.Background(), d.callTimeout)
	defer cancel()
	err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if !containerMayRemain(err) {
		return
	}
	d.logger.Warn("container of a failed start not removed; removing it when the engine answers", "container", shortID(id), "error", err)
	d.images.adopt(image)
	d.queueLeftover(id, image)
}

// createContainer creates the container; one left behind under the same
// name by an earlier attempt (a crash between create and start) is removed
// first, as its configuration may be stale.
func (d *Driver) createContainer(ctx context.Context, cli *client.Client, spec *createSpec) (string, error) {
	for attempt := 0; ; attempt++ {
		resp, err := cli.ContainerCreate(ctx, spec.Config, spec.Host, nil, nil, spec.Name)
		if err == nil {
			for _, w := range resp.Warnings {
				d.logger.Warn("container create", "container", spec.Name, "warning", w)
			}
			return resp.ID, nil
		}
		if !errdefs.IsConflict(err) || attempt > 0 {
			return "", fmt.Errorf("create container: %w", err)
		}
		if rerr := cli.ContainerRemove(ctx, spec.Name, container.RemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil {
			return "", fmt.Errorf("create container: %w (and removing the old one failed: %v)", err, rerr)
		}
	}
}

// RecoverTask implements drivers.Driver: it re-attaches to the container a
// previous client process started, without restarting it, and copies its
// output from where the task's log files end. A recovery that fails while
// the container may still exist (the engine is down or does not answer)
// queues the container as a leftover: the task runner forgets the handle,
// and the container, still running with live-restore and holding its
// ports, is removed when the engine answers again.
func (d *Driver) RecoverTask(th *drivers.TaskHandle) error {
	if th == nil || th.Config == nil {
		return errors.New("handle with a task config is required")
	}
	d.mu.Lock()
	_, exists := d.tasks[th.Config.ID]
	d.mu.Unlock()
	if exists {
		return nil
	}
	// No sweep meanwhile: it could remove the container recovered here.
	d.sweepMu.RLock()
	defer d.sweepMu.RUnlock()
	cli, err := d.client()
	if err != nil {
		return fmt.Errorf("%s client: %w", d.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ds driverState
	if len(th.DriverState) == 0 {
		// The client stored the handle before StartTask returned: find the
		// container by the task ID label it carries, if it was created.
		if ds, err = d.findContainer(ctx, cli, th.Config.ID); err != nil {
			if !errors.Is(err, errNoContainer) {
				d.queueUnrecovered(th.Config, "", err)
			}
			return err
		}
	} else if err := json.Unmarshal(th.DriverState, &ds); err != nil {
		return fmt.Errorf("decode driver state: %w", err)
	}
	if ds.ContainerID == "" {
		return errors.New("driver state has no container ID")
	}
	info, err := cli.ContainerInspect(ctx, ds.ContainerID)
	if err != nil {
		if containerMayRemain(err) {
			d.queueUnrecovered(th.Config, ds.ContainerID, err)
		}
		return fmt.Errorf("container %s: %w", shortID(ds.ContainerID), err)
	}
	// Queued by an earlier recovery that failed: it is the task's again.
	d.dropLeftover(ds.ContainerID)
	d.dropTaskLeftover(th.Config.ID)
	if info.State != nil && (info.State.Status == "created" || info.State.Status == "configured") {
		// The client stopped between creating the container and starting
		// it: the task never ran, and the engine would report it exited
		// (code 0) at once. The runner starts the task anew; a task not to
		// be started again leaves no container behind either. (podman may
		// say "configured" for "created".)
		image := ds.Image
		if image == "" && info.Config != nil {
			image = info.Config.Image
		}
		d.removeFailedStart(cli, ds.ContainerID, image)
		return fmt.Errorf("container %s: %w", shortID(ds.ContainerID), errNeverStarted)
	}
	if ds.StartedAt.IsZero() && info.State != nil {
		ds.StartedAt = parseTime(info.State.StartedAt)
	}
	tty := info.Config != nil && info.Config.Tty
	h := newHandle(d, cli, th.Config, ds, tty)
	d.images.adopt(ds.Image)
	// Resume the output where the log files end: what the container wrote
	// while no client copied it is copied now (the engine keeps it).
	since := lastLogWrite(th.Config)
	if !since.IsZero() {
		// File times are coarse (a kernel tick): without the margin, the
		// last lines written could come a second time.
		since = since.Add(mtimeGranularity)
	}
	h.run(since)
	d.mu.Lock()
	d.tasks[th.Config.ID] = h
	d.mu.Unlock()
	d.logger.Debug("container recovered", "task", th.Config.ID, "container", shortID(ds.ContainerID), "running", info.State.Running)
	return nil
}

// queueUnrecovered queues the container of a task whose recovery failed
// with err: by containerID, or ("") by the task's label. It holds a
// reference on the task's image until it is removed.
func (d *Driver) queueUnrecovered(cfg *drivers.TaskConfig, containerID string, err error) {
	image := ""
	if tc, perr := d.flavor.parseTask(cfg.Config); perr == nil {
		image = tc.Image
		if tc.ImageFromLoad {
			image, _ = archiveImageRef(cfg.TaskDir, tc.Load)
		}
	}
	d.logger.Warn("task not recovered; its container is removed when the engine answers", "task", cfg.ID, "container", shortID(containerID), "error", err)
	d.images.adopt(image)
	if containerID == "" {
		d.queueTaskLeftover(cfg.ID, image)
	} else {
		d.queueLeftover(containerID, image)
	}
}

// errNeverStarted: the task's container was created but never started.
var errNeverStarted = errors.New("created but never started (the client stopped before starting it)")

// errNoContainer: the engine has no container for the task.
var errNoContainer = errors.New("no container for the task")

// findContainer is the container created for task id (by its label).
func (d *Driver) findContainer(ctx context.Context, cli *client.Client, id string) (driverState, error) {
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", labelTaskID+"="+id))})
	if err != nil {
		return driverState{}, fmt.Errorf("list containers of task %s: %w", id, err)
	}
	if len(cs) == 0 {
		return driverState{}, fmt.Errorf("task %s: %w", id, errNoContainer)
	}
	c := cs[0]
	return driverState{ContainerID: c.ID, Image: c.Image, ImageID: c.ImageID}, nil
}

func (d *Driver) get(id string) (*taskHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.tasks[id]
	if !ok {
		return nil, drivers.ErrTaskNotFound
	}
	return h, nil
}

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	h, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	ch := make(chan *drivers.ExitResult, 1)
	go func() {
		select {
		case <-h.done:
			ch <- h.exitResult()
		case <-ctx.Done():
		}
	}()
	return ch, nil
}

// StopTask implements drivers.Driver: the kill signal (default SIGTERM),
// up to timeout for the container to exit, then SIGKILL.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	h, err := d.get(taskID)
	if err != nil {
		return err
	}
	return h.stop(timeout, signal)
}

// DestroyTask implements drivers.Driver: the container is removed (unless
// gc.container = false) and its image released.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	h, err := d.get(taskID)
	if err != nil {
		return err
	}
	if !h.exited() {
		if !force {
			return fmt.Errorf("task %q is still running; stop it or destroy with force", taskID)
		}
		if err := h.stop(0, "SIGKILL"); err != nil {
			return err
		}
	}
	if err := h.destroy(d.cfg.GCContainer); err != nil {
		// The container has exited but the engine did not remove it (it
		// is down or restarting). The task is forgotten all the same: kept,
		// it made every later start of the task fail as "already started"
		// for as long as the client ran. The container is removed when
		// the engine answers again (sweepLeftovers), or by the next start
		// of the task, which takes its name. It keeps the task's image
		// reference until then: released now, gc.image tried to remove an
		// image the container still used, failed, and never tried again.
		d.logger.Warn("exited container not removed; removing it when the engine answers", "task", taskID, "container", shortID(h.state.ContainerID), "error", err)
		d.queueLeftover(h.state.ContainerID, h.state.Image)
	} else {
		d.images.release(h.state.Image)
	}
	d.mu.Lock()
	delete(d.tasks, taskID)
	d.mu.Unlock()
	return nil
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	h, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	return h.status(), nil
}

// SignalTask implements drivers.Driver: the engine delivers the signal to
// the container's main process.
func (d *Driver) SignalTask(taskID string, signal string) error {
	h, err := d.get(taskID)
	if err != nil {
		return err
	}
	if h.exited() {
		return fmt.Errorf("task %q has exited", taskID)
	}
	if signal == "" {
		signal = "SIGTERM"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return h.cli.ContainerKill(ctx, h.state.ContainerID, signal)
}

// mtimeGranularity bounds how far a file's modification time may lag the
// write that set it.
const mtimeGranularity = 20 * time.Millisecond

// lastLogWrite is when the task's output was last written to its rotated
// log files (<task>.stdout.N and .stderr.N beside the FIFOs); zero when
// there are none, so everything is copied.
func lastLogWrite(cfg *drivers.TaskConfig) time.Time {
	var last time.Time
	if cfg.StdoutPath == "" {
		return last
	}
	ents, err := os.ReadDir(filepath.Dir(cfg.StdoutPath))
	if err != nil {
		return last
	}
	for _, e := range ents {
		for _, typ := range []string{".stdout.", ".stderr."} {
			n, ok := strings.CutPrefix(e.Name(), cfg.Name+typ)
			if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
				continue
			}
			if fi, err := e.Info(); err == nil && fi.ModTime().After(last) {
				last = fi.ModTime()
			}
		}
	}
	return last
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 2000 {
		return time.Time{}
	}
	return t
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
