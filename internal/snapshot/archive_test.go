package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func testMeta() *Meta {
	return FromRaft(&raft.SnapshotMeta{ID: "2-10-1", Index: 10, Term: 2, Version: 1,
		Configuration: raft.Configuration{Servers: []raft.Server{{ID: "a", Address: "127.0.0.1:4647"}}}}, time.Unix(1700000000, 0))
}

func TestArchiveRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	state := []byte("fsm state bytes")
	if err := Write(&buf, testMeta(), state); err != nil {
		t.Fatal(err)
	}
	meta, got, err := Read(bytes.NewReader(buf.Bytes()), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, state) || meta.Index != 10 || meta.Term != 2 || meta.Size != int64(len(state)) ||
		len(meta.Configuration.Servers) != 1 || meta.RaftMeta().ID != "2-10-1" {
		t.Fatalf("round trip: meta %+v state %q", meta, got)
	}
}

// writeFiles builds an archive from raw files, for the refusals.
func writeFiles(files map[string]string, order ...string) []byte {
	var out bytes.Buffer
	gz := gzip.NewWriter(&out)
	tw := tar.NewWriter(gz)
	for _, name := range order {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(files[name])), Typeflag: tar.TypeReg})
		tw.Write([]byte(files[name]))
	}
	tw.Close()
	gz.Close()
	return out.Bytes()
}

func TestArchiveRefusals(t *testing.T) {
	var good bytes.Buffer
	Write(&good, testMeta(), []byte("state"))
	metaJSON := `{"Format":1,"Index":5}`
	future := `{"Format":99,"Index":5}`
	for name, tc := range map[string]struct {
		data []byte
		max  int64
		want string
	}{
		"not gzip":      {[]byte("plain"), 0, "not gzip"},
		"missing state": {writeFiles(map[string]string{"meta.json": metaJSON, "SHA256SUMS": ""}, "meta.json", "SHA256SUMS"), 0, "missing state.bin"},
		"bad checksum": {writeFiles(map[string]string{"meta.json": metaJSON, "state.bin": "x",
			"SHA256SUMS": sum([]byte(metaJSON)) + "  meta.json\n" + strings.Repeat("0", 64) + "  state.bin\n"}, "meta.json", "state.bin", "SHA256SUMS"), 0, "checksum of state.bin"},
		"newer format": {writeFiles(map[string]string{"meta.json": future, "state.bin": "x",
			"SHA256SUMS": sum([]byte(future)) + "  meta.json\n" + sum([]byte("x")) + "  state.bin\n"}, "meta.json", "state.bin", "SHA256SUMS"), 0, "format 99"},
		"extra file":     {writeFiles(map[string]string{"evil": "x"}, "evil"), 0, "unexpected file"},
		"state too big":  {good.Bytes(), 2, "more than the 2 allowed"},
		"truncated gzip": {good.Bytes()[:len(good.Bytes())/2], 0, "not valid"},
	} {
		_, _, err := Read(bytes.NewReader(tc.data), tc.max)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
}
