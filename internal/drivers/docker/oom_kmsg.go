package docker

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
)

// kernelOOMKilled reports whether the kernel's log (/dev/kmsg) records an
// OOM kill in the memory cgroup of the container: its "oom-kill:" line
// names the cgroup (oom_memcg=/libpod_parent/libpod-<id>, .../libpod-<id>.scope,
// /docker/<id> or .../docker-<id>.scope), so the kill is the container's,
// whatever else ran out of memory. Podman 4.3 with conmon 2.1 on cgroup
// v1 never sets State.OOMKilled (conmon writes its "oom" file into its
// working directory, where podman does not look), and dockerd misses it
// when the exit reaches it before containerd's OOM event (seen on a
// loaded host); this is how the driver still tells. False when the log cannot be read (no root, no /dev/kmsg in this
// namespace) or no longer holds the record.
func kernelOOMKilled(containerID string) bool {
	if containerID == "" {
		return false
	}
	// A raw non-blocking descriptor: through os.File the runtime poller
	// would make the read at the end of the log wait for the next record.
	fd, err := syscall.Open("/dev/kmsg", syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	return scanOOM(rawReader(fd), containerID)
}

type rawReader int

func (r rawReader) Read(b []byte) (int, error) { return syscall.Read(int(r), b) }

// scanOOM reads kmsg records (one per read) until none is left.
func scanOOM(f interface{ Read([]byte) (int, error) }, containerID string) bool {
	buf := make([]byte, 8192)
	for {
		n, err := f.Read(buf)
		if err != nil {
			if errors.Is(err, syscall.EPIPE) {
				continue // records were overwritten while reading: go on
			}
			return false // EAGAIN: the end
		}
		rec := buf[:n]
		if i := bytes.Index(rec, []byte("oom-kill:")); i >= 0 {
			if j := bytes.Index(rec[i:], []byte("oom_memcg=")); j >= 0 {
				memcg := rec[i+j:]
				if k := bytes.IndexAny(memcg, ",\n"); k >= 0 {
					memcg = memcg[:k]
				}
				if containerMemcg(string(memcg[len("oom_memcg="):]), containerID) {
					return true
				}
			}
		}
		if n <= 0 {
			return false
		}
	}
}

// containerMemcg reports whether a memory cgroup path is the container's
// own: its last element is libpod-<id>[.scope] (podman), docker-<id>.scope
// (dockerd with systemd) or <id> under a docker parent (cgroupfs).
func containerMemcg(path, containerID string) bool {
	parent, last := "", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		parent, last = path[:i], path[i+1:]
	}
	switch last {
	case "libpod-" + containerID, "libpod-" + containerID + ".scope", "docker-" + containerID + ".scope":
		return true
	case containerID:
		return strings.HasSuffix(parent, "/docker") || parent == "docker"
	}
	return false
}
