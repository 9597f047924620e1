package logs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Collector copies a task's stdout and stderr from FIFOs into rotating
// files. The driver opens StdoutPath/StderrPath for writing. The collector
// holds each FIFO open read-write, so a writer never blocks on open and the
// stream does not end when the task (or a restart of it) closes its end:
// output written after the task exited is still collected, until Close.
type Collector struct {
	stdout, stderr *stream
	closeOnce      sync.Once
	closeErr       error
}

// FifoPath is the FIFO the driver writes a task's stream to.
func FifoPath(logDir, task, typ string) string {
	return filepath.Join(logDir, "."+task+"."+typ+".fifo")
}

// StartCollector creates (or reuses) the task's FIFOs in logDir and starts
// copying them to <task>.stdout.<n> / <task>.stderr.<n>.
func StartCollector(logDir, task string, maxFiles, maxSizeMB int) (*Collector, error) {
	if maxSizeMB <= 0 {
		return nil, fmt.Errorf("max file size must be positive, got %d MB", maxSizeMB)
	}
	return startCollector(logDir, task, maxFiles, int64(maxSizeMB)<<20)
}

func startCollector(logDir, task string, maxFiles int, maxBytes int64) (*Collector, error) {
	out, err := startStream(logDir, task, "stdout", maxFiles, maxBytes)
	if err != nil {
		return nil, err
	}
	errS, err := startStream(logDir, task, "stderr", maxFiles, maxBytes)
	if err != nil {
		out.close()
		return nil, err
	}
	return &Collector{stdout: out, stderr: errS}, nil
}

// StdoutPath is the FIFO for the task's stdout.
func (c *Collector) StdoutPath() string { return c.stdout.fifo }

// StderrPath is the FIFO for the task's stderr.
func (c *Collector) StderrPath() string { return c.stderr.fifo }

// Close copies what is still buffered in the FIFOs, closes the files and
// removes the FIFOs. It is safe to call more than once.
func (c *Collector) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = errors.Join(c.stdout.close(), c.stderr.close())
	})
	return c.closeErr
}

type stream struct {
	fifo    string
	f       *os.File
	rot     *Rotator
	closing atomic.Bool
	done    chan struct{}
	err     error
}

func startStream(logDir, task, typ string, maxFiles int, maxBytes int64) (*stream, error) {
	if task == "" || filepath.Base(task) != task {
		return nil, fmt.Errorf("invalid task name %q", task)
	}
	p := FifoPath(logDir, task, typ)
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeNamedPipe == 0 {
		if err := os.Remove(p); err != nil {
			return nil, err
		}
	}
	if err := syscall.Mkfifo(p, 0o600); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create fifo %s: %w", p, err)
	}
	// Read-write: open never blocks and reads never see EOF while we live.
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open fifo %s: %w", p, err)
	}
	rot, err := newRotator(logDir, task+"."+typ, maxFiles, maxBytes)
	if err != nil {
		f.Close()
		return nil, err
	}
	s := &stream{fifo: p, f: f, rot: rot, done: make(chan struct{})}
	go s.run()
	return s, nil
}

func (s *stream) run() {
	defer close(s.done)
	buf := make([]byte, 32*1024)
	for {
		n, err := s.f.Read(buf)
		if n > 0 {
			_, _ = s.rot.Write(buf[:n]) // a full disk loses lines, never the task
		}
		if err != nil {
			if !s.closing.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
				s.err = err
			}
			break
		}
	}
	// Drain: read without waiting until the FIFO is empty.
	if err := s.f.SetReadDeadline(time.Time{}); err == nil {
		if rc, err := s.f.SyscallConn(); err == nil {
			for {
				var n int
				var rerr error
				_ = rc.Read(func(fd uintptr) bool {
					n, rerr = syscall.Read(int(fd), buf)
					return true
				})
				if n <= 0 || rerr != nil {
					break
				}
				_, _ = s.rot.Write(buf[:n])
			}
		}
	}
	s.err = errors.Join(s.err, s.f.Close(), s.rot.Close())
}

func (s *stream) close() error {
	s.closing.Store(true)
	// Wake the blocked reader; it then drains what is buffered.
	if err := s.f.SetReadDeadline(time.Now()); err != nil && !errors.Is(err, os.ErrClosed) {
		s.f.Close()
	}
	<-s.done
	_ = os.Remove(s.fifo)
	return s.err
}
