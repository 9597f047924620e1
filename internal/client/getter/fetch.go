package getter

import (
	"compress/bzip2"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Config is the client agent's `client { artifact { ... } }` block, as the
// fetcher applies it. Zero limits mean no limit.
type Config struct {
	// HTTPReadTimeout bounds one HTTP download (request and body).
	HTTPReadTimeout time.Duration
	// HTTPMaxSize bounds the bytes one HTTP download may have.
	HTTPMaxSize int64
	// DecompressionSizeLimit bounds the bytes an archive unpacks to;
	// DecompressionFileCountLimit the files it may hold.
	DecompressionSizeLimit      int64
	DecompressionFileCountLimit int
	// DisableFilesystemIsolation lets local (file) sources name any path;
	// otherwise they must be inside the allocation directory or under
	// one of FilesystemIsolationExtraPaths.
	DisableFilesystemIsolation    bool
	FilesystemIsolationExtraPaths []string
	// GitTimeout bounds one git clone.
	GitTimeout time.Duration
	// Transport, if set, replaces the default HTTP transport (tests).
	Transport http.RoundTripper
}

// Request is one artifact, interpolated.
type Request struct {
	Source      string
	Options     map[string]string
	Headers     map[string]string
	Mode        string // any (""), file or dir
	Insecure    bool
	Destination string // relative to TaskDir; "" is local/
	// TaskDir is the task's directory; its parent is the allocation
	// directory, which the destination must not leave.
	TaskDir string
	// Owner, if set, is who the fetched files are chowned to.
	Owner *Owner
}

// Owner is a uid and gid to chown to.
type Owner struct{ UID, GID int }

type fetcher struct {
	cfg Config
	req Request
	tmp string
}

// Fetch downloads one artifact into the task directory and returns the
// path it wrote (a file in mode file, else a directory).
func Fetch(ctx context.Context, cfg Config, req Request) (string, error) {
	mode := req.Mode
	switch mode {
	case "":
		mode = "any"
	case "any", "file", "dir":
	default:
		return "", fmt.Errorf("mode %q is unknown (want any, file or dir)", req.Mode)
	}
	src, err := parseSource(req.Source, req.Options)
	if err != nil {
		return "", err
	}
	dest := req.Destination
	if dest == "" {
		dest = "local/"
		if mode == "file" {
			dest = "local/" + path.Base(sourceName(src))
		}
	}
	if err := CheckDestination(dest); err != nil {
		return "", err
	}
	dst := filepath.Join(req.TaskDir, dest)
	tmp, err := os.MkdirTemp(req.TaskDir, ".artifact-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	f := &fetcher{cfg: cfg, req: req, tmp: tmp}
	if src.kind == "git" {
		if mode == "file" {
			return "", errors.New("mode \"file\" cannot take a git repository: use mode \"any\" or \"dir\"")
		}
		if err := f.fetchGit(ctx, src.git, dst); err != nil {
			return "", err
		}
		if req.Owner != nil {
			if err := chownTree(dst, *req.Owner); err != nil {
				return "", fmt.Errorf("chown: %v", err)
			}
		}
		return dst, nil
	}
	dl := filepath.Join(tmp, "download")
	if err := f.download(ctx, src, dl); err != nil {
		return "", err
	}
	if src.checksum != "" {
		if err := f.verifyChecksum(ctx, dl, src.checksum, sourceName(src)); err != nil {
			return "", err
		}
	}
	switch {
	case src.archive == "gz" || src.archive == "bz2":
		if mode != "file" {
			return "", fmt.Errorf("a %s source decompresses to a single file: set mode = \"file\" (destination is then the file's path)", src.archive)
		}
		err = f.decompressFile(dl, dst, src.archive)
	case src.archive != "":
		if mode == "file" {
			return "", fmt.Errorf("mode \"file\" cannot unpack a %s archive: use mode \"any\" or \"dir\", or set archive = \"false\"", src.archive)
		}
		err = f.unpack(dl, dst, src.archive)
	default:
		switch mode {
		case "dir":
			return "", errors.New("mode \"dir\" needs an archive source (the source is not one; use mode \"any\" or \"file\")")
		case "any":
			name := path.Base(sourceName(src))
			if name == "" || name == "." || name == "/" {
				return "", fmt.Errorf("source %q names no file", req.Source)
			}
			if err = os.MkdirAll(dst, 0o755); err != nil {
				return "", err
			}
			dst = filepath.Join(dst, name)
		}
		err = f.place(dl, dst)
	}
	if err != nil {
		return "", err
	}
	if req.Owner != nil {
		if err := chownTree(dst, *req.Owner); err != nil {
			return "", fmt.Errorf("chown: %v", err)
		}
	}
	return dst, nil
}

func sourceName(s *source) string {
	if s.kind == "http" {
		return s.url.Path
	}
	return s.path
}

// download fetches the source's bytes into p.
func (f *fetcher) download(ctx context.Context, s *source, p string) error {
	if s.kind == "file" {
		return f.copyLocal(s.path, p)
	}
	if f.cfg.HTTPReadTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.cfg.HTTPReadTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url.String(), nil)
	if err != nil {
		return err
	}
	for k, v := range f.req.Headers {
		req.Header.Set(k, v)
	}
	tr := f.cfg.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if f.req.Insecure {
			t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		}
		defer t.CloseIdleConnections()
		tr = t
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && f.cfg.HTTPReadTimeout > 0 {
			return fmt.Errorf("no answer within the client's artifact http_read_timeout (%s)", f.cfg.HTTPReadTimeout)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("bad response code: %d", resp.StatusCode)
	}
	max := f.cfg.HTTPMaxSize
	if max > 0 && resp.ContentLength > max {
		return fmt.Errorf("the response is %d bytes, more than the client's artifact http_max_size (%d bytes)", resp.ContentLength, max)
	}
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	var body io.Reader = resp.Body
	if max > 0 {
		body = io.LimitReader(resp.Body, max+1)
	}
	n, err := io.Copy(out, body)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the download did not finish within the client's artifact http_read_timeout (%s)", f.cfg.HTTPReadTimeout)
		}
		return fmt.Errorf("reading the response: %v", err)
	}
	if max > 0 && n > max {
		return fmt.Errorf("the response is more than the client's artifact http_max_size (%d bytes)", max)
	}
	return nil
}

// copyLocal copies a local source file. Relative paths are read from the
// task directory.
func (f *fetcher) copyLocal(p, dst string) error {
	if !filepath.IsAbs(p) {
		p = filepath.Join(f.req.TaskDir, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Errorf("source file: %v", err)
	}
	if !f.cfg.DisableFilesystemIsolation {
		if err := f.checkIsolated(real); err != nil {
			return err
		}
	}
	st, err := os.Stat(real)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("source %q is not a regular file", p)
	}
	in, err := os.Open(real)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// checkIsolated refuses a local path outside the allocation directory
// and the extra paths the client allows.
func (f *fetcher) checkIsolated(p string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Errorf("source: %v", err)
	}
	allowed := []string{filepath.Dir(f.req.TaskDir)}
	for _, e := range f.cfg.FilesystemIsolationExtraPaths {
		allowed = append(allowed, extraPath(e))
	}
	for _, a := range allowed {
		if ar, err := filepath.EvalSymlinks(a); err == nil {
			a = ar
		}
		if rel, err := filepath.Rel(a, real); err == nil && filepath.IsLocal(rel) {
			return nil
		}
	}
	return fmt.Errorf("source %q is outside the allocation directory, which the client's artifact filesystem isolation confines local sources to (see disable_filesystem_isolation and filesystem_isolation_extra_paths)", p)
}

// extraPath is the path of a filesystem_isolation_extra_paths entry,
// written as Nomad takes them ("f:r:/etc/ssl/cert.pem", "d:rx:/opt/x") or
// as a bare path.
func extraPath(e string) string {
	parts := strings.SplitN(e, ":", 3)
	if len(parts) == 3 && (parts[0] == "f" || parts[0] == "d") {
		return parts[2]
	}
	return e
}

// place moves the downloaded file to dst (replacing a file there).
func (f *fetcher) place(dl, dst string) error {
	if st, err := os.Lstat(dst); err == nil && st.IsDir() {
		return fmt.Errorf("destination %q is a directory", dst)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	os.Remove(dst) // a symlink there must not be followed
	return os.Rename(dl, dst)
}

// decompressFile writes a .gz or .bz2 source, decompressed, to dst.
func (f *fetcher) decompressFile(dl, dst, typ string) error {
	in, err := os.Open(dl)
	if err != nil {
		return err
	}
	defer in.Close()
	var r io.Reader
	if typ == "gz" {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("gzip: %v", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = bzip2.NewReader(in)
	}
	out := filepath.Join(f.tmp, "decompressed")
	w, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = copyLimited(w, r, f.cfg.DecompressionSizeLimit)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	return f.place(out, dst)
}

// errSizeLimit is an archive past the decompression size limit.
type errSizeLimit struct{ limit int64 }

func (e errSizeLimit) Error() string {
	return fmt.Sprintf("the archive unpacks to more than the client's artifact decompression_size_limit (%d bytes)", e.limit)
}

// copyLimited copies r to w, failing past limit bytes (0: no limit).
func copyLimited(w io.Writer, r io.Reader, limit int64) error {
	if limit <= 0 {
		_, err := io.Copy(w, r)
		return err
	}
	n, err := io.Copy(w, io.LimitReader(r, limit+1))
	if err != nil {
		return err
	}
	if n > limit {
		return errSizeLimit{limit}
	}
	return nil
}

// chownTree chowns p and, for a directory, everything under it (symlinks
// themselves, not their targets).
func chownTree(p string, o Owner) error {
	return filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(q, o.UID, o.GID)
	})
}

// trimDot removes a leading "./" from archive entry names.
func trimDot(name string) string {
	for strings.HasPrefix(name, "./") {
		name = name[2:]
	}
	return name
}
