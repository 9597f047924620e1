package logs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Rotator is an io.WriteCloser writing <dir>/<base>.<n>, moving to n+1 when
// the current file reaches the size limit and deleting the oldest files so
// that at most maxFiles remain. It continues after the highest existing
// index, so a restarted client appends rather than overwrites.
type Rotator struct {
	dir, base string
	maxFiles  int
	maxBytes  int64

	mu     sync.Mutex
	f      *os.File
	idx    int
	size   int64
	closed bool
}

// NewRotator opens (or continues) the rotation of <dir>/<base>.<n>.
func NewRotator(dir, baseName string, maxFiles int, maxFileSizeMB int) (*Rotator, error) {
	if maxFileSizeMB <= 0 {
		return nil, fmt.Errorf("max file size must be positive, got %d MB", maxFileSizeMB)
	}
	return newRotator(dir, baseName, maxFiles, int64(maxFileSizeMB)<<20)
}

func newRotator(dir, base string, maxFiles int, maxBytes int64) (*Rotator, error) {
	if maxFiles < 1 {
		return nil, fmt.Errorf("max files must be at least 1, got %d", maxFiles)
	}
	if base == "" || strings.ContainsRune(base, '/') {
		return nil, fmt.Errorf("invalid log base name %q", base)
	}
	r := &Rotator{dir: dir, base: base, maxFiles: maxFiles, maxBytes: maxBytes}
	idxs, err := indexes(dir, base)
	if err != nil {
		return nil, err
	}
	if len(idxs) > 0 {
		r.idx = idxs[len(idxs)-1]
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	r.purge()
	return r, nil
}

func (r *Rotator) path(i int) string {
	return filepath.Join(r.dir, r.base+"."+strconv.Itoa(i))
}

// open opens (or creates) the current file. The name is the rotator's own,
// but a task can write the log dir: whatever else it put there (a named
// pipe that would block the open, a symlink that would make the client
// append to a file outside the alloc dir) is removed, and the open neither
// follows a symlink nor blocks.
func (r *Rotator) open() error {
	p := r.path(r.idx)
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("replacing %s, which is not a regular file: %w", filepath.Base(p), err)
		}
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("log file %s is not a regular file", filepath.Base(p))
	}
	r.f, r.size = f, fi.Size()
	return nil
}

// Write implements io.Writer. A write larger than the room left is split
// across files.
func (r *Rotator) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, os.ErrClosed
	}
	written := 0
	for len(p) > 0 {
		if r.size >= r.maxBytes {
			if err := r.rotate(); err != nil {
				return written, err
			}
		}
		chunk := p
		if room := r.maxBytes - r.size; int64(len(chunk)) > room {
			chunk = chunk[:room]
		}
		n, err := r.f.Write(chunk)
		written += n
		r.size += int64(n)
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// rotate moves to the next file. When that one cannot be opened the next
// write tries the one after it, rather than failing for ever.
func (r *Rotator) rotate() error {
	if r.f != nil {
		err := r.f.Close()
		r.f = nil
		if err != nil {
			return err
		}
	}
	r.idx++
	if err := r.open(); err != nil {
		return err
	}
	r.purge()
	return nil
}

// purge deletes files older than the newest maxFiles.
func (r *Rotator) purge() {
	idxs, err := indexes(r.dir, r.base)
	if err != nil {
		return
	}
	for _, i := range idxs {
		if i <= r.idx-r.maxFiles {
			_ = os.Remove(r.path(i))
		}
	}
}

// Close implements io.Closer.
func (r *Rotator) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}

// indexes lists the n of every <base>.<n> in dir, ascending.
func indexes(dir, base string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	prefix := base + "."
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, prefix) {
			continue
		}
		s := name[len(prefix):]
		if s == "" || strings.TrimLeft(s, "0123456789") != "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			continue
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

// FindLogFiles returns the paths of a task's log files of one type
// ("stdout" or "stderr"), oldest first.
func FindLogFiles(logDir, task, typ string) ([]string, error) {
	if typ != "stdout" && typ != "stderr" {
		return nil, fmt.Errorf("log type must be stdout or stderr, got %q", typ)
	}
	if task == "" || strings.ContainsRune(task, '/') {
		return nil, errors.New("invalid task name")
	}
	base := task + "." + typ
	idxs, err := indexes(logDir, base)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(idxs))
	for i, n := range idxs {
		out[i] = filepath.Join(logDir, base+"."+strconv.Itoa(n))
	}
	return out, nil
}
