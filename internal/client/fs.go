package client

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/client/allocdir"
	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/client/logs"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/nomad/api"
)

// Streaming parameters.
const (
	streamFrameSize    = 64 * 1024
	streamPollInterval = 100 * time.Millisecond
	// FileEvent values of stream frames.
	fileEventTruncated = "file truncated"
	fileEventDeleted   = "file deleted"
)

// fsPath maps an fs API path ("/alloc/logs", "web/local") to a path the
// alloc dir resolves.
func fsPath(p string) string {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "."
	}
	return p
}

// fsError gives filesystem errors the HTTP status they mean, with messages
// that name alloc-relative paths only (ad scrubs the alloc dir's host path;
// it may be nil before the alloc is known).
func fsError(ad allocrunner.AllocDir, err error) error {
	if err == nil {
		return nil
	}
	if ad != nil {
		err = ad.Scrub(err)
	}
	var ce *structs.CodedError
	switch {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, allocdir.ErrEscape), errors.Is(err, allocdir.ErrNotRegular),
		errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP):
		return structs.NewErrCoded(400, "%s", err.Error())
	case errors.Is(err, os.ErrNotExist):
		return structs.NewErrCoded(404, "%s", err.Error())
	case errors.Is(err, os.ErrPermission):
		return structs.NewErrCoded(403, "%s", err.Error())
	}
	return err
}

// FSList lists a directory of an allocation.
func (c *Client) FSList(allocID, path string) ([]*api.AllocFileInfo, error) {
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return nil, err
	}
	out, err := ar.AllocDir().List(fsPath(path))
	if err != nil {
		return nil, fsError(ar.AllocDir(), err)
	}
	return out, nil
}

// FSStat describes one file or directory of an allocation.
func (c *Client) FSStat(allocID, path string) (*api.AllocFileInfo, error) {
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return nil, err
	}
	fi, err := ar.AllocDir().Stat(fsPath(path))
	if err != nil {
		return nil, fsError(ar.AllocDir(), err)
	}
	return fi, nil
}

// FSReadAt reads limit bytes (limit <= 0: to EOF) from offset of a file.
func (c *Client) FSReadAt(allocID, path string, offset, limit int64) (io.ReadCloser, error) {
	if offset < 0 {
		return nil, structs.NewErrCoded(400, "offset must be non-negative")
	}
	f, ad, err := c.openAllocFile(allocID, path)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		f.Close()
		return nil, fsError(ad, err)
	}
	r := &scrubReader{f: f, ad: ad}
	if limit <= 0 {
		return r, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(r, limit), r}, nil
}

// scrubReader reads an alloc file; its errors name alloc-relative paths.
type scrubReader struct {
	f  *os.File
	ad allocrunner.AllocDir
}

func (r *scrubReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil && err != io.EOF {
		err = r.ad.Scrub(err)
	}
	return n, err
}

func (r *scrubReader) Close() error { return r.ad.Scrub(r.f.Close()) }

// openAllocFile opens a regular file of the allocation for reading (never a
// directory, named pipe, socket or device: see AllocDir.OpenRead).
func (c *Client) openAllocFile(allocID, path string) (*os.File, allocrunner.AllocDir, error) {
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return nil, nil, err
	}
	ad := ar.AllocDir()
	f, err := ad.OpenRead(fsPath(path))
	if err != nil {
		return nil, nil, fsError(ad, err)
	}
	return f, ad, nil
}

// send delivers a frame unless ctx ends first.
func send(ctx context.Context, out chan<- *api.StreamFrame, f *api.StreamFrame) bool {
	select {
	case out <- f:
		return true
	case <-ctx.Done():
		return false
	}
}

// wait sleeps one poll interval; false when ctx is done.
func wait(ctx context.Context) bool {
	t := time.NewTimer(streamPollInterval)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// FSStream streams a file as frames from offset (origin "start") or from
// offset bytes before its end (origin "end"). With follow it keeps sending
// new data until ctx is done (truncation and deletion are reported as
// FileEvent frames); without, it returns after the current end of file.
func (c *Client) FSStream(ctx context.Context, allocID, path, origin string, offset int64, follow bool, out chan<- *api.StreamFrame) error {
	if origin == "" {
		origin = "start"
	}
	if origin != "start" && origin != "end" {
		return structs.NewErrCoded(400, "origin must be start or end, got %q", origin)
	}
	if offset < 0 {
		return structs.NewErrCoded(400, "offset must be non-negative")
	}
	f, ad, err := c.openAllocFile(allocID, path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fsError(ad, err)
	}
	pos := offset
	if origin == "end" {
		pos = max(fi.Size()-offset, 0)
	}
	pos = min(pos, fi.Size())
	name := strings.TrimLeft(path, "/")
	for {
		n, err := streamFrom(ctx, f, name, &pos, out)
		if err != nil || ctx.Err() != nil {
			return fsError(ad, ignoreCtx(err))
		}
		if !follow {
			return nil
		}
		if n > 0 {
			continue
		}
		// No new data: did the file shrink or disappear?
		st, err := f.Stat()
		if err == nil && st.Size() < pos {
			pos = 0
			if !send(ctx, out, &api.StreamFrame{File: name, FileEvent: fileEventTruncated}) {
				return nil
			}
			continue
		}
		if _, err := os.Stat(f.Name()); errors.Is(err, os.ErrNotExist) {
			send(ctx, out, &api.StreamFrame{File: name, FileEvent: fileEventDeleted})
			return nil
		}
		if !wait(ctx) {
			return nil
		}
	}
}

func ignoreCtx(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// streamFrom sends what the file holds from *pos to its current end and
// returns how many bytes it sent. Frame offsets are the file offsets after
// their data.
func streamFrom(ctx context.Context, f *os.File, name string, pos *int64, out chan<- *api.StreamFrame) (int64, error) {
	var sent int64
	buf := make([]byte, streamFrameSize)
	for {
		n, err := f.ReadAt(buf, *pos)
		if n > 0 {
			*pos += int64(n)
			sent += int64(n)
			data := make([]byte, n)
			copy(data, buf[:n])
			if !send(ctx, out, &api.StreamFrame{File: name, Offset: *pos, Data: data}) {
				return sent, ctx.Err()
			}
		}
		if err == io.EOF || (err == nil && n == 0) {
			return sent, nil
		}
		if err != nil {
			return sent, err
		}
	}
}

// FSLogs streams a task's stdout or stderr across its rotated files
// (<task>.<type>.0, .1, ...). origin "start": offset bytes into the
// concatenated logs; "end": offset bytes back from their end. With follow it
// waits for new data and moves on to newer files until ctx is done or the
// task is finished and everything was sent; without, it returns after the
// data present now.
func (c *Client) FSLogs(ctx context.Context, allocID, task, logType, origin string, offset int64, follow bool, out chan<- *api.StreamFrame) error {
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return err
	}
	if task == "" {
		return structs.NewErrCoded(400, "missing task name")
	}
	if known, _ := ar.TaskFinished(task); !known {
		return structs.NewErrCoded(404, "unknown task name %q", task)
	}
	if logType != "stdout" && logType != "stderr" {
		return structs.NewErrCoded(400, "log type must be \"stdout\" or \"stderr\", got %q", logType)
	}
	if origin == "" {
		origin = "start"
	}
	if origin != "start" && origin != "end" {
		return structs.NewErrCoded(400, "origin must be start or end, got %q", origin)
	}
	if offset < 0 {
		return structs.NewErrCoded(400, "offset must be non-negative")
	}
	ad := ar.AllocDir()
	logDir := ad.LogDir()
	// Log files are opened through the alloc dir like any fs path, so one
	// that a task replaced by a named pipe, a device or a symlink out of the
	// alloc dir is refused, never opened.
	open := func(p string) (*os.File, error) {
		return ad.OpenRead(path.Join(allocdir.SharedAllocName, allocdir.LogDirName, filepath.Base(p)))
	}

	// Find the starting file and offset in it.
	files, err := logs.FindLogFiles(logDir, task, logType)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fsError(ad, err)
	}
	sizes := make([]int64, len(files))
	var total int64
	for i, p := range files {
		f, err := open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // rotated away meanwhile
		}
		if err != nil {
			return fsError(ad, err)
		}
		if fi, err := f.Stat(); err == nil {
			sizes[i] = fi.Size()
			total += sizes[i]
		}
		f.Close()
	}
	target := offset
	if origin == "end" {
		target = max(total-offset, 0)
	}
	target = min(target, total)
	idx, pos := 0, target
	for idx < len(files)-1 && pos >= sizes[idx] {
		pos -= sizes[idx]
		idx++
	}
	var cur string
	if len(files) > 0 {
		cur = files[idx]
	}

	for {
		// Was the task already finished before this pass? Then, once this
		// pass found no more data, nothing more will come.
		_, finishedBefore := ar.TaskFinished(task)
		progressed := false
		if cur != "" {
			f, err := open(cur)
			if err == nil {
				rel := path.Join(allocdir.SharedAllocName, allocdir.LogDirName, filepath.Base(cur))
				n, serr := streamFrom(ctx, f, rel, &pos, out)
				f.Close()
				if serr != nil || ctx.Err() != nil {
					return fsError(ad, ignoreCtx(serr))
				}
				progressed = n > 0
			} else if !errors.Is(err, os.ErrNotExist) {
				return fsError(ad, err)
			}
		}
		// A newer file means this one is complete: move on.
		files, _ = logs.FindLogFiles(logDir, task, logType)
		if next := nextFile(files, cur); next != "" {
			cur, pos = next, 0
			continue
		}
		if progressed {
			continue
		}
		if follow && c.shuttingDown() {
			// The agent stops (outside dev mode its tasks keep running, and
			// detaching them makes them look finished): an error, so that a
			// follower resumes when the agent is back instead of taking
			// this for the end of the log.
			return errStreamShutdown
		}
		if !follow || finishedBefore {
			return nil
		}
		if !wait(ctx) {
			return nil
		}
	}
}

// errStreamShutdown ends a followed log when the client agent stops.
var errStreamShutdown = structs.NewErrCoded(503, "client agent shutting down: the task's log was not finished; follow it again when the agent is back")

// nextFile returns the file after cur in the ordered list (the first one
// when cur is ""), or "".
func nextFile(files []string, cur string) string {
	if cur == "" {
		if len(files) > 0 {
			return files[0]
		}
		return ""
	}
	for i, f := range files {
		if f == cur && i+1 < len(files) {
			return files[i+1]
		}
	}
	return ""
}
