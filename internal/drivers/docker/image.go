package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/drover-project/drover/internal/drivers"
)

// imageRefs makes sure a task's image is present (loaded from a tarball,
// or pulled when missing or force_pull) and counts the tasks using each
// image reference; with gc.image a reference no task uses is removed after
// gc.image_delay, unless a task took it again in the meantime. Removing the
// reference (not the image ID) only untags an image other tags still name,
// and the engine refuses to remove one a container uses.
type imageRefs struct {
	d *Driver

	mu     sync.Mutex
	refs   map[string]int         // image reference -> tasks using it
	timers map[string]*time.Timer // pending removals
	locks  map[string]*sync.Mutex // per reference: one pull, load or removal at a time
}

func newImageRefs(d *Driver) *imageRefs {
	return &imageRefs{d: d, refs: map[string]int{}, timers: map[string]*time.Timer{}, locks: map[string]*sync.Mutex{}}
}

// lock serialises the pulls, loads and removal of one reference; other
// images are not held up by a slow pull.
func (r *imageRefs) lock(ref string) func() {
	r.mu.Lock()
	l := r.locks[ref]
	if l == nil {
		l = &sync.Mutex{}
		r.locks[ref] = l
	}
	r.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// acquire makes the task's image present, references it once for the
// caller (release with tc.Image) and returns its ID.
func (r *imageRefs) acquire(cli *client.Client, cfg *drivers.TaskConfig, tc *TaskConfig) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), tc.ImagePullTimeout)
	defer cancel()
	// Under the reference's lock, so a delayed removal (which takes it too)
	// never removes an image between ensure and the reference being counted.
	defer r.lock(tc.Image)()
	id, err := r.ensure(ctx, cli, cfg, tc)
	if err != nil {
		return "", err
	}
	r.adopt(tc.Image)
	return id, nil
}

// adopt references an image already in use (a recovered task).
func (r *imageRefs) adopt(ref string) {
	if ref == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refs[ref]++
	if t := r.timers[ref]; t != nil {
		t.Stop()
		delete(r.timers, ref)
	}
}

// release drops one reference; the last one schedules the removal.
func (r *imageRefs) release(ref string) {
	if ref == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refs[ref] > 0 {
		r.refs[ref]--
	}
	if r.refs[ref] > 0 || !r.d.cfg.GCImage {
		return
	}
	delete(r.refs, ref)
	if t := r.timers[ref]; t != nil {
		t.Stop()
	}
	r.timers[ref] = time.AfterFunc(r.d.cfg.GCImageDelay, func() { r.remove(ref) })
}

func (r *imageRefs) remove(ref string) {
	defer r.lock(ref)()
	r.mu.Lock()
	if r.refs[ref] > 0 {
		r.mu.Unlock()
		return
	}
	delete(r.timers, ref)
	r.mu.Unlock()
	cli, err := r.d.client()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil && !errdefs.IsNotFound(err) {
		// In use by a container Drover does not own, or tagged elsewhere:
		// leaving it is right.
		r.d.logger.Debug("image not removed", "image", ref, "error", err)
		return
	}
	r.d.logger.Debug("unused image removed", "image", ref)
}

func (r *imageRefs) ensure(ctx context.Context, cli *client.Client, cfg *drivers.TaskConfig, tc *TaskConfig) (string, error) {
	if tc.Load != "" {
		cfg.Event("Loading image", map[string]string{"image": tc.Image, "archive": tc.Load})
		if err := loadImage(ctx, cli, cfg.TaskDir, tc.Load); err != nil {
			return "", err
		}
		info, err := cli.ImageInspect(ctx, tc.Image)
		if err != nil {
			return "", fmt.Errorf("image %q not found after loading %s: %w", tc.Image, tc.Load, err)
		}
		return info.ID, nil
	}
	if !tc.ForcePull {
		if info, err := cli.ImageInspect(ctx, tc.Image); err == nil {
			return info.ID, nil
		} else if !errdefs.IsNotFound(err) {
			return "", fmt.Errorf("inspect image %q: %w", tc.Image, err)
		}
	}
	if err := r.pull(ctx, cli, cfg, tc); err != nil {
		return "", err
	}
	info, err := cli.ImageInspect(ctx, tc.Image)
	if err != nil {
		return "", fmt.Errorf("image %q not found after pulling it: %w", tc.Image, err)
	}
	return info.ID, nil
}

// loadImage is `docker load -i` of a tarball in the task dir (where an
// artifact put it: a relative path is tried in the task dir, then local/).
func loadImage(ctx context.Context, cli *client.Client, taskDir, load string) error {
	f, err := os.Open(loadPath(taskDir, load))
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	resp, err := cli.ImageLoad(ctx, f, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fmt.Errorf("load image from %s: %w", load, err)
	}
	defer resp.Body.Close()
	return readJSONMessages(resp.Body, nil)
}

// pull pulls the image; the pull is abandoned when the engine reports no
// progress for pull_activity_timeout.
// As Nomad, the task records "Downloading image" (with the image) when the
// pull starts, and the pull's progress every pullProgressInterval while it
// lasts.
func (r *imageRefs) pull(ctx context.Context, cli *client.Client, cfg *drivers.TaskConfig, tc *TaskConfig) error {
	auth, err := r.d.registryAuth(tc)
	if err != nil {
		if !tc.AuthSoftFail {
			return err
		}
		r.d.logger.Warn("registry credentials unavailable; pulling anonymously", "image", tc.Image, "error", err)
		auth = ""
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg.Event("Downloading image", map[string]string{"image": tc.Image})
	rc, err := cli.ImagePull(ctx, tc.Image, image.PullOptions{RegistryAuth: auth})
	if err != nil {
		return fmt.Errorf("pull image %q: %w", tc.Image, err)
	}
	defer rc.Close()
	activity := make(chan struct{}, 1)
	stalled := make(chan struct{})
	go func() {
		t := time.NewTimer(r.d.cfg.PullActivityTimeout)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-activity:
				t.Reset(r.d.cfg.PullActivityTimeout)
			case <-t.C:
				close(stalled)
				cancel()
				return
			}
		}
	}()
	progress := newPullProgress()
	lastReport := time.Now()
	err = readJSONMessages(rc, func(m jsonMessage) {
		select {
		case activity <- struct{}{}:
		default:
		}
		progress.add(m)
		if time.Since(lastReport) >= pullProgressInterval {
			lastReport = time.Now()
			cfg.Event("Image "+tc.Image+" pull progress: "+progress.String(), map[string]string{"image": tc.Image})
		}
	})
	select {
	case <-stalled:
		return fmt.Errorf("pull image %q: no progress for %s (pull_activity_timeout)", tc.Image, r.d.cfg.PullActivityTimeout)
	default:
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("pull image %q: did not finish within image_pull_timeout (%s)", tc.Image, tc.ImagePullTimeout)
		}
		return fmt.Errorf("pull image %q: %w", tc.Image, err)
	}
	return nil
}

// readJSONMessages reads the engine's progress stream and returns the
// first error it reports.
func readJSONMessages(r io.Reader, onMessage func(jsonMessage)) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if onMessage != nil {
			onMessage(m)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}

// registryAuth is the encoded credential for the image's registry: the
// task's auth block, else the plugin's auth.config file, else its
// auth.helper; "" pulls anonymously.
func (d *Driver) registryAuth(tc *TaskConfig) (string, error) {
	var ac *registry.AuthConfig
	if a := tc.Auth; a != nil {
		ac = &registry.AuthConfig{Username: a.Username, Password: a.Password, Email: a.Email, ServerAddress: a.ServerAddress}
	} else {
		server := registryHost(tc.Image)
		var err error
		if d.cfg.AuthConfig != "" {
			if ac, err = authFromConfigFile(d.cfg.AuthConfig, server); err != nil {
				return "", err
			}
		}
		if ac == nil && d.cfg.AuthHelper != "" {
			if ac, err = authFromHelper(d.cfg.AuthHelper, server); err != nil {
				return "", err
			}
		}
	}
	if ac == nil {
		return "", nil
	}
	return registry.EncodeAuthConfig(*ac)
}

// registryHost is the registry part of an image reference.
func registryHost(ref string) string {
	first, _, found := strings.Cut(ref, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return "docker.io"
}
