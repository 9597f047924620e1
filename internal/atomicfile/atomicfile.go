// Package atomicfile owns writing a small file so that a reader (or the
// process after a crash) sees the old content or the new, never part of
// either: the data goes to a synced temporary file in the same directory,
// which is renamed over the target, and the directory is synced so the
// rename itself survives a power loss.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path's content with data, atomically, with mode perm.
func Write(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err == nil {
		if _, err = f.Write(data); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
