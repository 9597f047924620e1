package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/drover-project/drover/internal/drivers"
)

// The pause container holds an allocation's network namespace when its
// group is in bridge mode: the engine creates it with no network, the
// client mounts its namespace at the allocation's path and configures it
// (internal/client/bridgenet), and every docker task of the allocation
// joins it (network_mode "container:<pause>").
//
// Its image is built here, offline, so a node needs no registry: one file,
// /pause, a 129-byte static x86-64 ELF written below that blocks in
// pause(2) forever (the container is removed with SIGKILL, which PID 1
// cannot ignore). Imported once per engine as PauseImage.
const PauseImage = "drover-pause:1"

// PauseName is the name of an allocation's pause container.
func PauseName(allocID string) string { return "drover-pause-" + allocID }

const pauseLabel = "com.drover.pause.alloc"

var _ drivers.NetworkCreator = (*Driver)(nil)

// CreatesNetwork implements drivers.NetworkCreator: Docker's containers
// join a namespace only through another container, so the docker driver
// makes the pause container. Podman's join the client's namespace by its
// path instead (network mode "ns:<path>", see buildCreateSpec): measured on
// podman 4.3, a container in "container:<pause>" mode makes podman refuse
// to remove the pause container, even forced, while the task container
// exists ("has dependent containers"), and path mode needs no pause image,
// no second container and conmon per allocation, and lets the task keep
// its hostname, DNS settings and extra hosts.
func (d *Driver) CreatesNetwork() bool { return !d.flavor.Podman }

// pauseELF returns the pause program for the node's architecture.
func pauseELF(goarch string) ([]byte, error) {
	if goarch != "amd64" {
		return nil, fmt.Errorf("docker tasks in a bridge network need the pause image, built only for amd64 (this node is %s)", goarch)
	}
	// loop: mov eax, 34 (pause); syscall; jmp loop
	code := []byte{0xb8, 0x22, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xeb, 0xf7}
	const base, hdr = 0x400000, 64 + 56
	var b bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { _ = binary.Write(&b, le, v) }
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	w(uint16(2))          // ET_EXEC
	w(uint16(0x3e))       // EM_X86_64
	w(uint32(1))          // EV_CURRENT
	w(uint64(base + hdr)) // entry
	w(uint64(64))         // program headers
	w(uint64(0))          // no section headers
	w(uint32(0))          // flags
	w(uint16(64))         // header size
	w(uint16(56))         // program header size
	w(uint16(1))          // one program header
	w([3]uint16{})        // no sections
	w(uint32(1))          // PT_LOAD
	w(uint32(5))          // R+X
	w(uint64(0))          // offset
	w(uint64(base))       // vaddr
	w(uint64(base))       // paddr
	n := uint64(hdr + len(code))
	w(n)              // filesz
	w(n)              // memsz
	w(uint64(0x1000)) // align
	b.Write(code)
	return b.Bytes(), nil
}

// ensurePauseImage imports the pause image unless the engine has it.
func (d *Driver) ensurePauseImage(ctx context.Context, cli *client.Client) error {
	unlock := d.images.lock(PauseImage)
	defer unlock()
	if _, _, err := cli.ImageInspectWithRaw(ctx, PauseImage); err == nil {
		return nil
	}
	bin, err := pauseELF(runtime.GOARCH)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(bin)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, PauseImage,
		image.ImportOptions{Changes: []string{`ENTRYPOINT ["/pause"]`}})
	if err != nil {
		return fmt.Errorf("import the pause image: %w", err)
	}
	defer rc.Close()
	return readJSONMessages(rc, func(jsonMessage) {})
}

// CreateNetwork implements drivers.NetworkCreator: it starts the
// allocation's pause container (or finds it running) and mounts its
// network namespace at nsPath.
func (d *Driver) CreateNetwork(allocID, nsPath string) error {
	if allocID == "" || strings.ContainsAny(allocID, "/ ") {
		return fmt.Errorf("bad allocation ID %q", allocID)
	}
	cli, err := d.client()
	if err != nil {
		return fmt.Errorf("%s client: %w", d.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := PauseName(allocID)
	info, err := cli.ContainerInspect(ctx, name)
	switch {
	case err == nil && info.State != nil && info.State.Running:
		// An agent restart: keep it, and the namespace mounted from it.
	case err != nil && !errdefs.IsNotFound(err):
		return fmt.Errorf("inspect the pause container: %w", err)
	default:
		if err == nil { // there but stopped: its namespace is gone
			_ = cli.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
		}
		if err := d.ensurePauseImage(ctx, cli); err != nil {
			return err
		}
		resp, err := cli.ContainerCreate(ctx, &container.Config{Image: PauseImage, Labels: map[string]string{pauseLabel: allocID}},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, name)
		if err != nil {
			return fmt.Errorf("create the pause container: %w", err)
		}
		if err := cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
			d.removeFailedStart(cli, resp.ID, "")
			return fmt.Errorf("start the pause container: %w", err)
		}
		if info, err = cli.ContainerInspect(ctx, resp.ID); err != nil {
			return fmt.Errorf("inspect the pause container: %w", err)
		}
		// A namespace mounted from an earlier pause container is stale.
		_ = unmountNetNS(nsPath)
	}
	if info.State == nil || info.State.Pid <= 0 {
		return errors.New("the pause container has no process")
	}
	return mountNetNS(nsPath, info.State.Pid)
}

// mountNetNS mounts the namespace of pid at nsPath unless it is there.
func mountNetNS(nsPath string, pid int) error {
	want := fmt.Sprintf("/proc/%d/ns/net", pid)
	if sameNS(nsPath, want) {
		return nil
	}
	_ = unmountNetNS(nsPath)
	dir, name := filepath.Split(nsPath)
	if filepath.Clean(dir) != "/var/run/netns" {
		return fmt.Errorf("network namespace path %q is not under /var/run/netns", nsPath)
	}
	out, err := exec.Command("ip", "netns", "attach", name, fmt.Sprint(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip netns attach %s %d: %v: %s", name, pid, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func unmountNetNS(nsPath string) error {
	if _, err := os.Stat(nsPath); err != nil {
		return nil
	}
	out, err := exec.Command("ip", "netns", "del", filepath.Base(nsPath)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip netns del: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// sameNS reports whether two paths name the same namespace.
func sameNS(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// DestroyNetwork implements drivers.NetworkCreator: it removes the
// allocation's pause container (the client unmounts the namespace).
func (d *Driver) DestroyNetwork(allocID string) error {
	cli, err := d.client()
	if err != nil {
		return fmt.Errorf("%s client: %w", d.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = cli.ContainerRemove(ctx, PauseName(allocID), container.RemoveOptions{Force: true})
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove the pause container: %w", err)
	}
	return nil
}
