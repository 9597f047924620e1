package docker

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// loadPath is where a task's image tarball is: an absolute path, else
// relative to the task dir, else to its local/ (where artifacts land).
func loadPath(taskDir, load string) string {
	if filepath.IsAbs(load) {
		return load
	}
	path := filepath.Join(taskDir, load)
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join(taskDir, "local", load)
	}
	return path
}

// archiveImageRef is the image a `docker save` tarball names (the first
// RepoTags of its manifest.json), for tasks whose image is the archive
// itself (podman's `image = "docker-archive:<path>"`).
func archiveImageRef(taskDir, load string) (string, error) {
	f, err := os.Open(loadPath(taskDir, load))
	if err != nil {
		return "", fmt.Errorf("image archive: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("image archive %s has no manifest.json: it is not a docker-archive (docker save / podman save) tarball", load)
		}
		if err != nil {
			return "", fmt.Errorf("image archive %s: %w", load, err)
		}
		if filepath.Clean(h.Name) != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
			return "", fmt.Errorf("image archive %s: manifest.json: %w", load, err)
		}
		for _, e := range m {
			if len(e.RepoTags) > 0 {
				return e.RepoTags[0], nil
			}
		}
		return "", fmt.Errorf("image archive %s names no image (its manifest.json has no RepoTags): save it with a tag", load)
	}
}
