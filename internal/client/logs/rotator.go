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

func (r *Rotator) open() error {
	f, err := os.OpenFile(r.path(r.idx), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
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

func (r *Rotator) rotate() error {
	if err := r.f.Close(); err != nil {
		return err
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
