package allocdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrNotRegular is returned (wrapped, as a *NotRegularError) by OpenRead for
// anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError says what a path names instead of a regular file. Its
// message names the path relative to the alloc dir only.
type NotRegularError struct {
	Path string // alloc-relative, e.g. "alloc/data/pipe"
	Kind string // "a named pipe", "a directory", ...
}

func (e *NotRegularError) Error() string {
	if e.Kind == "a directory" {
		return fmt.Sprintf("%q is a directory", e.Path)
	}
	return fmt.Sprintf("%q is %s, not a regular file", e.Path, e.Kind)
}

// Unwrap lets errors.Is(err, ErrNotRegular) match.
func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// DisplayPath is how the fs API names rel in messages: relative to the alloc
// dir, cleaned, without a leading "/" ("/alloc//logs/" -> "alloc/logs").
func DisplayPath(rel string) string {
	return strings.TrimPrefix(filepath.ToSlash(filepath.Clean("/"+rel)), "/")
}

// kind describes a non-regular file mode.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file"
}

// OpenRead opens a regular file of the alloc dir for reading. Anything else
// (directory, named pipe, socket, device) is refused with a
// *NotRegularError before it is opened, so no caller can block on a FIFO
// nobody writes or read a device; the open itself is non-blocking and does
// not follow a final symlink, and the opened file is checked again (type,
// and that it is still inside the alloc dir) so that a task swapping the
// path between the checks and the open gains nothing. Errors name rel, never
// the host path.
func (d *AllocDir) OpenRead(rel string) (*os.File, error) {
	show := DisplayPath(rel)
	p, err := d.Resolve(rel)
	if err != nil {
		return nil, d.Scrub(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, d.Scrub(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: show, Kind: kind(fi.Mode())}
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) { // became a symlink since Resolve
			return nil, fmt.Errorf("%q: %w", show, ErrEscape)
		}
		return nil, d.Scrub(err)
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return fail(d.Scrub(err))
	}
	if !st.Mode().IsRegular() {
		return fail(&NotRegularError{Path: show, Kind: kind(st.Mode())})
	}
	// Where did the open land? A directory on the way may have been swapped
	// for a symlink after Resolve.
	if real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil {
		root, rerr := filepath.EvalSymlinks(d.AllocDir)
		if rerr != nil || !within(root, real) {
			return fail(fmt.Errorf("%q: %w", show, ErrEscape))
		}
	}
	return f, nil
}

// scrubbedError is an error whose message had host paths replaced; it
// unwraps to the original so errors.Is still sees the cause.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// Scrub rewrites err's message so that it names paths relative to the alloc
// dir ("open alloc/data/x: permission denied") and never the alloc dir's
// host path. errors.Is and errors.As still see the original error.
func (d *AllocDir) Scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := msg
	roots := []string{d.AllocDir}
	if r, rerr := filepath.EvalSymlinks(d.AllocDir); rerr == nil && r != d.AllocDir {
		roots = append(roots, r)
	}
	// Longest first, so a root that extends another is replaced whole.
	if len(roots) == 2 && len(roots[1]) > len(roots[0]) {
		roots[0], roots[1] = roots[1], roots[0]
	}
	for _, root := range roots {
		if root == "" || root == "/" {
			continue
		}
		out = strings.ReplaceAll(out, root+string(filepath.Separator), "")
		out = strings.ReplaceAll(out, root, ".")
	}
	if out == msg {
		return err
	}
	return &scrubbedError{msg: out, err: err}
}
