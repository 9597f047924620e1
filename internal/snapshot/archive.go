// Package snapshot owns the archive format of `operator snapshot save`:
// a gzip'd tar holding meta.json (the Raft index, term and configuration
// the snapshot was taken at), state.bin (the FSM's snapshot stream, as
// internal/fsm persists it) and SHA256SUMS over both. It reads and writes
// archives and checks them; it never touches Raft or the state store.
package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// Format is the archive version written in meta.json; Read refuses newer.
const Format = 1

// Names of the archive's files.
const (
	metaFile  = "meta.json"
	stateFile = "state.bin"
	sumsFile  = "SHA256SUMS"
)

// maxMetaBytes bounds meta.json and SHA256SUMS: both are small.
const maxMetaBytes = 1 << 20

// Meta describes a snapshot: where in the Raft log it was taken.
type Meta struct {
	Format  int
	ID      string
	Index   uint64
	Term    uint64
	Size    int64 // bytes of state.bin
	Created time.Time
	// Version is the Raft snapshot version; Configuration the Raft servers
	// at Index with ConfigurationIndex where that configuration was set.
	Version            raft.SnapshotVersion
	Configuration      raft.Configuration
	ConfigurationIndex uint64
}

// RaftMeta is the meta Raft's Restore takes.
func (m *Meta) RaftMeta() *raft.SnapshotMeta {
	return &raft.SnapshotMeta{Version: m.Version, ID: m.ID, Index: m.Index, Term: m.Term,
		Configuration: m.Configuration, ConfigurationIndex: m.ConfigurationIndex, Size: m.Size}
}

// FromRaft builds the archive's meta from Raft's.
func FromRaft(rm *raft.SnapshotMeta, now time.Time) *Meta {
	return &Meta{Format: Format, ID: rm.ID, Index: rm.Index, Term: rm.Term, Size: rm.Size, Created: now.UTC(),
		Version: rm.Version, Configuration: rm.Configuration, ConfigurationIndex: rm.ConfigurationIndex}
}

// Write writes the archive of meta and the FSM stream state to w. meta.Size
// is set from what state held.
func Write(w io.Writer, meta *Meta, state []byte) error {
	m := *meta
	m.Format = Format
	m.Size = int64(len(state))
	metaJSON, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return fmt.Errorf("snapshot: encoding meta: %w", err)
	}
	sums := fmt.Sprintf("%s  %s\n%s  %s\n", sum(metaJSON), metaFile, sum(state), stateFile)
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		data []byte
	}{{metaFile, metaJSON}, {stateFile, state}, {sumsFile, []byte(sums)}} {
		hdr := &tar.Header{Name: f.name, Mode: 0o600, Size: int64(len(f.data)), ModTime: m.Created, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("snapshot: writing %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return fmt.Errorf("snapshot: writing %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("snapshot: closing archive: %w", err)
	}
	return gz.Close()
}

// ErrCorrupt wraps every reason an archive is refused.
var ErrCorrupt = errors.New("snapshot archive is not valid")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Read reads and checks an archive: every file present, both checksums
// right, a format this build knows. maxState bounds state.bin (0: no
// bound).
func Read(r io.Reader, maxState int64) (*Meta, []byte, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, nil, corrupt("not gzip: %v", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, corrupt("reading tar: %v", err)
		}
		limit := int64(maxMetaBytes)
		switch hdr.Name {
		case stateFile:
			limit = maxState
		case metaFile, sumsFile:
		default:
			return nil, nil, corrupt("unexpected file %q", hdr.Name)
		}
		if limit > 0 && hdr.Size > limit {
			return nil, nil, corrupt("%s is %d bytes, more than the %d allowed", hdr.Name, hdr.Size, limit)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, tr); err != nil {
			return nil, nil, corrupt("reading %s: %v", hdr.Name, err)
		}
		files[hdr.Name] = buf.Bytes()
	}
	for _, name := range []string{metaFile, stateFile, sumsFile} {
		if _, ok := files[name]; !ok {
			return nil, nil, corrupt("missing %s", name)
		}
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(files[sumsFile])), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			want[f[1]] = f[0]
		}
	}
	for _, name := range []string{metaFile, stateFile} {
		if got := sum(files[name]); want[name] != got {
			return nil, nil, corrupt("checksum of %s is %s, SHA256SUMS says %q", name, got, want[name])
		}
	}
	var meta Meta
	if err := json.Unmarshal(files[metaFile], &meta); err != nil {
		return nil, nil, corrupt("meta.json: %v", err)
	}
	if meta.Format > Format || meta.Format <= 0 {
		return nil, nil, corrupt("format %d; this build reads up to %d", meta.Format, Format)
	}
	if meta.Index == 0 {
		return nil, nil, corrupt("meta.json has no index")
	}
	meta.Size = int64(len(files[stateFile]))
	return &meta, files[stateFile], nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
