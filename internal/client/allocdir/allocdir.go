package allocdir

import (
	"errors"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// Directory names inside an allocation and a task.
const (
	SharedAllocName = "alloc"
	SharedDataDir   = "data"
	LogDirName      = "logs"
	TmpDirName      = "tmp"
	TaskLocal       = "local"
	TaskSecrets     = "secrets"
	TaskPrivate     = "private"
)

// ErrEscape is returned (wrapped) for paths that leave the alloc dir.
var ErrEscape = errors.New("path escapes the allocation directory")

// AllocDir is one allocation's directory.
type AllocDir struct {
	// AllocDir is <allocRoot>/<allocID>.
	AllocDir string
	// SharedDir is <AllocDir>/alloc.
	SharedDir string
}

// New describes the directory of allocID under allocRoot; Build creates it.
func New(allocRoot, allocID string) *AllocDir {
	dir := filepath.Join(allocRoot, allocID)
	return &AllocDir{AllocDir: dir, SharedDir: filepath.Join(dir, SharedAllocName)}
}

// mkdir creates dir and sets its mode exactly (umask-independent).
func mkdir(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(dir, mode.Perm()); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}

type dirSpec struct {
	path string
	mode os.FileMode
}

// Build creates the shared directories and those of each task. It is
// idempotent.
func (d *AllocDir) Build(tasks []string) error {
	if err := mkdir(d.AllocDir, 0o755); err != nil {
		return fmt.Errorf("alloc dir: %w", err)
	}
	dirs := []dirSpec{
		{d.SharedDir, 0o755},
		{filepath.Join(d.SharedDir, SharedDataDir), 0o777},
		{filepath.Join(d.SharedDir, LogDirName), 0o777},
		{filepath.Join(d.SharedDir, TmpDirName), 0o777 | os.ModeSticky},
	}
	for _, t := range tasks {
		if t == "" || t == SharedAllocName || strings.ContainsAny(t, `/\`) || t == "." || t == ".." {
			return fmt.Errorf("invalid task name %q for a directory", t)
		}
		td := d.TaskDir(t)
		dirs = append(dirs,
			dirSpec{td, 0o777},
			dirSpec{filepath.Join(td, TaskLocal), 0o777},
			dirSpec{filepath.Join(td, TaskSecrets), 0o700},
			dirSpec{filepath.Join(td, TmpDirName), 0o777 | os.ModeSticky},
			dirSpec{filepath.Join(td, TaskPrivate), 0o700},
		)
	}
	for _, x := range dirs {
		if err := mkdir(x.path, x.mode); err != nil {
			return fmt.Errorf("build alloc dir: %w", err)
		}
	}
	return nil
}

// TaskDir is the task's working directory <AllocDir>/<task>.
func (d *AllocDir) TaskDir(task string) string { return filepath.Join(d.AllocDir, task) }

// TaskLocalDir is NOMAD_TASK_DIR.
func (d *AllocDir) TaskLocalDir(task string) string {
	return filepath.Join(d.AllocDir, task, TaskLocal)
}

// TaskSecretsDir is NOMAD_SECRETS_DIR.
func (d *AllocDir) TaskSecretsDir(task string) string {
	return filepath.Join(d.AllocDir, task, TaskSecrets)
}

// LogDir is <AllocDir>/alloc/logs.
func (d *AllocDir) LogDir() string { return filepath.Join(d.SharedDir, LogDirName) }

// Destroy removes the whole allocation directory.
func (d *AllocDir) Destroy() error {
	if d.AllocDir == "" || d.AllocDir == "/" {
		return fmt.Errorf("refusing to remove %q", d.AllocDir)
	}
	if err := os.RemoveAll(d.AllocDir); err != nil {
		return fmt.Errorf("destroy alloc dir: %w", err)
	}
	return nil
}

// Resolve maps a path relative to the alloc dir ("alloc/logs/web.stdout.0",
// "/web/local") to an absolute path, after following every symlink, that is
// guaranteed to be inside the alloc dir. Paths that leave it ("..",
// symlinks pointing outside) are rejected with an error wrapping ErrEscape.
// Absolute paths are rejected too: the fs API's "/alloc/logs" must have its
// leading "/" trimmed by the caller. "" and "." name the alloc dir itself.
// The final path need not exist.
func (d *AllocDir) Resolve(rel string) (string, error) {
	if strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("%q: %w", rel, ErrEscape)
	}
	if filepath.IsAbs(rel) {
		return "", fmt.Errorf("%q is absolute, want a path relative to the allocation directory: %w", rel, ErrEscape)
	}
	root, err := filepath.EvalSymlinks(d.AllocDir)
	if err != nil {
		return "", fmt.Errorf("alloc dir: %w", err)
	}
	clean := filepath.Clean("/" + rel)
	// Reject explicit ".." even when it would stay inside: users of the fs API
	// must name paths directly.
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if part == ".." {
			return "", fmt.Errorf("%q: %w", rel, ErrEscape)
		}
	}
	full := filepath.Join(root, clean)
	resolved, err := evalExisting(full)
	if err != nil {
		return "", err
	}
	if !within(root, resolved) {
		return "", fmt.Errorf("%q: %w", rel, ErrEscape)
	}
	return resolved, nil
}

// evalExisting follows symlinks in the longest existing prefix of p and
// appends the rest.
func evalExisting(p string) (string, error) {
	var rest []string
	cur := p
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		// A dangling symlink: where does it point?
		if target, lerr := os.Readlink(cur); lerr == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(parent, target)
			}
			cur = filepath.Clean(target)
			continue
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// fileInfo converts to the fs API's wire type.
func fileInfo(name string, fi os.FileInfo) *api.AllocFileInfo {
	out := &api.AllocFileInfo{
		Name:     name,
		IsDir:    fi.IsDir(),
		Size:     fi.Size(),
		FileMode: fi.Mode().String(),
		ModTime:  fi.ModTime(),
	}
	if !fi.IsDir() {
		out.ContentType = mime.TypeByExtension(filepath.Ext(name))
	}
	return out
}

// Stat describes one path of the alloc dir (symlinks followed, inside only).
// Errors name alloc-relative paths only, as do List's.
func (d *AllocDir) Stat(rel string) (*api.AllocFileInfo, error) {
	p, err := d.Resolve(rel)
	if err != nil {
		return nil, d.Scrub(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, d.Scrub(err)
	}
	return fileInfo(filepath.Base(filepath.Clean("/"+rel)), fi), nil
}

// List lists a directory of the alloc dir, sorted by name. Entries that are
// symlinks are described by what they point to when that is inside the
// alloc dir, and as links otherwise.
func (d *AllocDir) List(rel string) ([]*api.AllocFileInfo, error) {
	p, err := d.Resolve(rel)
	if err != nil {
		return nil, d.Scrub(err)
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, d.Scrub(err)
	}
	out := make([]*api.AllocFileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if tp, rerr := d.Resolve(filepath.Join(rel, e.Name())); rerr == nil {
				if tfi, serr := os.Stat(tp); serr == nil {
					fi = tfi
				}
			}
		}
		out = append(out, fileInfo(e.Name(), fi))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
