package client

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/structs"
)

// ephemeral_disk migrate across nodes. The node of the replacement gets a
// migrate token for it with its allocations (Node.GetClientAllocs), waits
// until the servers report the previous allocation terminal, and fetches
// /v1/client/allocation/<prev>/snapshot from the previous node's HTTP
// address with the token: a gzipped tar of the previous allocation's
// alloc/data and each task's local/ (SnapshotAlloc). The archive is
// unpacked into a staging directory inside the new allocation directory
// (regular files and directories only; nothing may leave it), then moved
// into place; on any error the staging directory is removed and the
// allocation starts with empty directories, an event saying why.

// migratedDirs are the paths, relative to an allocation directory, whose
// content migrates: alloc/data and each task's local/.
func migratedDirs(tasks []string) []string {
	out := []string{filepath.Join("alloc", "data")}
	for _, t := range tasks {
		out = append(out, filepath.Join(t, "local"))
	}
	return out
}

// SnapshotAlloc writes the migrating directories of a local allocation to
// w as a gzipped tar, for the node of its replacement holding token.
func (c *Client) SnapshotAlloc(allocID, token string, w io.Writer) error {
	c.allocMu.RLock()
	ar := c.allocs[allocID]
	c.allocMu.RUnlock()
	if ar == nil {
		return structs.NewErrCoded(http.StatusNotFound, "Unknown allocation %q", allocID)
	}
	if !structs.CompareMigrateToken(allocID, c.secretID(), token) {
		return structs.NewErrCoded(http.StatusForbidden, "Permission denied")
	}
	a := ar.Alloc()
	var tasks []string
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
		for _, t := range tg.Tasks {
			tasks = append(tasks, t.Name)
		}
	}
	root := filepath.Join(c.cfg.AllocDir, allocID)
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, rel := range migratedDirs(tasks) {
		if err := tarDir(tw, root, rel); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// tarDir adds root/rel and what it holds (directories and regular files;
// symlinks and devices are left out) to tw, named relative to root.
func tarDir(tw *tar.Writer, root, rel string) error {
	start := filepath.Join(root, rel)
	if fi, err := os.Lstat(start); err != nil || !fi.IsDir() {
		return nil // nothing to migrate there
	}
	return filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		name, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(name)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, hdr.Size)
		return err
	})
}

// untarInto unpacks a migration archive into dir, which it creates.
// Only directories and regular files under the migrating paths are
// accepted; any other entry, or a name that would leave dir, fails it.
func untarInto(r io.Reader, dir string, tasks []string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("reading the archive: %w", err)
	}
	allowed := migratedDirs(tasks)
	tr := tar.NewReader(gz)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		name := filepath.Clean(filepath.FromSlash(hdr.Name))
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) || !underAny(name, allowed) {
			return fmt.Errorf("archive entry %q is outside the migrating directories", hdr.Name)
		}
		target := filepath.Join(dir, name)
		mode := os.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			_ = os.Chmod(target, mode)
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("archive entry %q is not a file or directory", hdr.Name)
		}
	}
}

// underAny reports whether rel is one of roots or inside one.
func underAny(rel string, roots []string) bool {
	for _, r := range roots {
		if rel == r || strings.HasPrefix(rel, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// remotePrevAlloc is a previous allocation that ran on another node.
type remotePrevAlloc struct {
	c          *Client
	allocID    string
	prevNodeID string
	token      string
	// skip, once Wait returned, says why nothing can be fetched.
	skip string
	addr string
	tls  bool // the previous node serves its HTTP API over TLS
}

func (p *remotePrevAlloc) ID() string { return p.allocID }

// Wait polls the servers until the previous allocation is terminal on its
// client, its node is down or gone, or it was garbage collected.
func (p *remotePrevAlloc) Wait(stop <-chan struct{}) bool {
	for p.prevNodeID == "" {
		got, err := p.c.fetchAllocs([]string{p.allocID}, 0)
		if err == nil && len(got) == 1 {
			p.prevNodeID = got[0].NodeID
			break
		}
		if err != nil && strings.Contains(err.Error(), "returned 0 of 1") {
			p.skip = "the previous allocation was garbage collected"
			return true
		}
		select {
		case <-stop:
			return false
		case <-p.c.shutdownCh:
			return false
		case <-time.After(500 * time.Millisecond):
		}
	}
	for {
		node, err := p.c.nodeByID(p.prevNodeID)
		switch {
		case err != nil:
			p.c.logger.Debug("looking up the previous allocation's node", "node_id", p.prevNodeID, "error", err)
		case node == nil:
			p.skip = fmt.Sprintf("previous node %s no longer exists", shortNodeID(p.prevNodeID))
			return true
		case node.Status == structs.NodeStatusDown:
			p.skip = fmt.Sprintf("previous node %s is down", shortNodeID(p.prevNodeID))
			return true
		default:
			p.addr, p.tls = node.HTTPAddr, node.TLSEnabled
			prev, err := p.c.fetchAllocs([]string{p.allocID}, 0)
			if err != nil && strings.Contains(err.Error(), "returned 0 of 1") {
				p.skip = "the previous allocation was garbage collected"
				return true
			}
			if err == nil && len(prev) == 1 && prev[0].ClientTerminalStatus() {
				return true
			}
		}
		select {
		case <-stop:
			return false
		case <-p.c.shutdownCh:
			return false
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Move fetches the previous allocation's data from its node.
func (p *remotePrevAlloc) Move(dst string, tasks []string) error {
	if p.skip != "" {
		return errors.New(p.skip)
	}
	if p.tls {
		// Not yet: the fetch would need the agent's TLS client settings.
		return fmt.Errorf("previous node %s serves its HTTP API over TLS, which data migration does not support yet", shortNodeID(p.prevNodeID))
	}
	if p.addr == "" {
		return fmt.Errorf("previous node %s has no HTTP address", shortNodeID(p.prevNodeID))
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+p.addr+"/v1/client/allocation/"+p.allocID+"/snapshot", nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Nomad-Token", p.token)
	resp, err := (&http.Client{Timeout: 10 * time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("fetching from previous node %s: %w", shortNodeID(p.prevNodeID), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("previous node %s answered %d: %s", shortNodeID(p.prevNodeID), resp.StatusCode, strings.TrimSpace(string(b)))
	}
	staging := filepath.Join(dst, ".migrating-"+p.allocID)
	defer os.RemoveAll(staging)
	if err := untarInto(resp.Body, staging, tasks); err != nil {
		return err
	}
	return allocrunner.MoveAllocData(staging, dst, tasks)
}

// nodeByID asks the servers for a node (nil when they do not know it).
func (c *Client) nodeByID(id string) (*structs.Node, error) {
	req := &structs.NodeSpecificRequest{NodeID: id, QueryOptions: structs.QueryOptions{
		Region: c.cfg.Region, AllowStale: true, AuthToken: c.secretID(),
	}}
	var resp structs.SingleNodeResponse
	err, ok := c.rpcUntilShutdown("Node.GetNode", req, &resp)
	if !ok {
		return nil, fmt.Errorf("shutting down")
	}
	return resp.Node, err
}

func shortNodeID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
