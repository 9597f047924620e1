package getter

import (
	"archive/tar"
	"archive/zip"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// unpacker writes archive entries under one directory, through an os.Root
// so no entry (nor a symlink an earlier entry made) reaches outside it.
type unpacker struct {
	root      *os.Root
	files     int
	bytes     int64
	fileLimit int
	sizeLimit int64
}

// unpack unpacks the archive at dl (of type typ) into the directory dst.
func (f *fetcher) unpack(dl, dst, typ string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	u := &unpacker{root: root, fileLimit: f.cfg.DecompressionFileCountLimit, sizeLimit: f.cfg.DecompressionSizeLimit}
	if typ == "zip" {
		return u.unzip(dl)
	}
	in, err := os.Open(dl)
	if err != nil {
		return err
	}
	defer in.Close()
	var r io.Reader = in
	switch typ {
	case "tar.gz", "tgz":
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("%s: %v", typ, err)
		}
		defer zr.Close()
		r = zr
	case "tar.bz2", "tbz2":
		r = bzip2.NewReader(in)
	}
	if err := u.untar(r); err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	return nil
}

// entryName checks an archive entry's name: it must stay inside the
// destination. "" means the destination itself.
func entryName(name string) (string, error) {
	n := trimDot(strings.ReplaceAll(name, "\\", "/"))
	if n == "" || n == "." || n == "./" {
		return "", nil
	}
	if strings.HasPrefix(n, "/") || !filepath.IsLocal(filepath.FromSlash(n)) {
		return "", fmt.Errorf("archive entry %q escapes the destination directory", name)
	}
	return filepath.Clean(filepath.FromSlash(n)), nil
}

// checkLink refuses a symlink whose target leaves the destination.
func checkLink(name, target string) error {
	if target == "" || strings.HasPrefix(target, "/") || filepath.IsAbs(target) {
		return fmt.Errorf("archive entry %q is a symlink to %q, outside the destination directory", name, target)
	}
	if !filepath.IsLocal(filepath.Join(filepath.Dir(name), filepath.FromSlash(target))) {
		return fmt.Errorf("archive entry %q is a symlink to %q, outside the destination directory", name, target)
	}
	return nil
}

func (u *unpacker) countFile() error {
	u.files++
	if u.fileLimit > 0 && u.files > u.fileLimit {
		return fmt.Errorf("the archive has more than the client's artifact decompression_file_count_limit (%d files)", u.fileLimit)
	}
	return nil
}

func (u *unpacker) mkdirParent(name string) error {
	if d := filepath.Dir(name); d != "." {
		return u.root.MkdirAll(d, 0o755)
	}
	return nil
}

// writeFile writes one regular file, replacing whatever was at name.
func (u *unpacker) writeFile(name string, perm fs.FileMode, r io.Reader) error {
	if err := u.countFile(); err != nil {
		return err
	}
	if err := u.mkdirParent(name); err != nil {
		return err
	}
	if st, err := u.root.Lstat(name); err == nil && !st.IsDir() {
		if err := u.root.Remove(name); err != nil {
			return err
		}
	}
	perm &= 0o777
	if perm == 0 {
		perm = 0o644
	}
	w, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	var remain int64 = -1
	if u.sizeLimit > 0 {
		remain = u.sizeLimit - u.bytes
	}
	var n int64
	if remain >= 0 {
		n, err = io.Copy(w, io.LimitReader(r, remain+1))
		if err == nil && n > remain {
			err = errSizeLimit{u.sizeLimit}
		}
	} else {
		n, err = io.Copy(w, r)
	}
	u.bytes += n
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// The umask may have narrowed the mode the archive asked for.
	return u.root.Chmod(name, perm)
}

func (u *unpacker) symlink(name, target string) error {
	if err := checkLink(name, target); err != nil {
		return err
	}
	// The target was checked against the entry's path as written; a
	// symlink among its parents would put the link elsewhere, where the
	// same target could leave the destination.
	for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
		if st, err := u.root.Lstat(d); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("archive entry %q is a symlink under the symlink %q, which is refused", name, d)
		}
	}
	if err := u.countFile(); err != nil {
		return err
	}
	if err := u.mkdirParent(name); err != nil {
		return err
	}
	if _, err := u.root.Lstat(name); err == nil {
		if err := u.root.Remove(name); err != nil {
			return err
		}
	}
	return u.root.Symlink(target, name)
}

func (u *unpacker) untar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		}
		name, err := entryName(h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if name != "" {
				if err := u.root.MkdirAll(name, 0o755); err != nil {
					return err
				}
			}
		case tar.TypeReg, tar.TypeRegA:
			if name == "" {
				return fmt.Errorf("archive entry %q is a file with no name", h.Name)
			}
			if err := u.writeFile(name, fs.FileMode(h.Mode), tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if name == "" {
				return fmt.Errorf("archive entry %q is a symlink with no name", h.Name)
			}
			if err := u.symlink(name, h.Linkname); err != nil {
				return err
			}
		case tar.TypeLink:
			target, err := entryName(h.Linkname)
			if err != nil || target == "" || name == "" {
				return fmt.Errorf("archive entry %q is a hard link to %q, outside the destination directory", h.Name, h.Linkname)
			}
			if err := u.countFile(); err != nil {
				return err
			}
			if err := u.mkdirParent(name); err != nil {
				return err
			}
			u.root.Remove(name)
			if err := u.root.Link(target, name); err != nil {
				return err
			}
		default:
			// Devices, fifos and the like are not unpacked.
		}
	}
}

func (u *unpacker) unzip(p string) error {
	zr, err := zip.OpenReader(p)
	if err != nil {
		return fmt.Errorf("zip: %v", err)
	}
	defer zr.Close()
	for _, zf := range zr.File {
		name, err := entryName(zf.Name)
		if err != nil {
			return err
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir() || strings.HasSuffix(zf.Name, "/"):
			if name != "" {
				if err := u.root.MkdirAll(name, 0o755); err != nil {
					return err
				}
			}
		case mode&fs.ModeSymlink != 0:
			rc, err := zf.Open()
			if err != nil {
				return err
			}
			b, err := io.ReadAll(io.LimitReader(rc, 4096))
			rc.Close()
			if err != nil {
				return err
			}
			if err := u.symlink(name, string(b)); err != nil {
				return err
			}
		default:
			if name == "" {
				return fmt.Errorf("archive entry %q is a file with no name", zf.Name)
			}
			rc, err := zf.Open()
			if err != nil {
				return err
			}
			err = u.writeFile(name, mode.Perm(), rc)
			rc.Close()
			if err != nil {
				return fmt.Errorf("zip: %s: %w", path.Clean(zf.Name), err)
			}
		}
	}
	return nil
}
