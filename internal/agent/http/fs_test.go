package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

func testFrames() []*api.StreamFrame {
	return []*api.StreamFrame{
		{Offset: 0, Data: []byte("hello "), File: "alloc/logs/web.stdout.0"},
		{Offset: 6, Data: []byte("world\n"), File: "alloc/logs/web.stdout.0"},
		{Offset: 12, File: "alloc/logs/web.stdout.0", FileEvent: "file truncated"},
	}
}

func TestFSListStatCatReadAt(t *testing.T) {
	env := newEnv(t, nil)
	alloc := &api.Allocation{ID: "a1", NodeID: "n1"}

	files, _, err := env.client.AllocFS().List(alloc, "/", nil)
	if err != nil || len(files) != 2 || files[0].Name != "alloc" || !files[0].IsDir {
		t.Fatalf("ls %+v %v", files, err)
	}
	if _, _, body := env.raw(t, "GET", "/v1/client/fs/ls/a1?path=/empty", ""); strings.TrimSpace(body) != "[]" {
		t.Fatalf("empty ls %q", body)
	}
	st, _, err := env.client.AllocFS().Stat(alloc, "alloc/logs/web.stdout.0", nil)
	if err != nil || st.Size != 12 || !st.ModTime.Equal(time.Unix(1700000000, 0)) {
		t.Fatalf("stat %+v %v", st, err)
	}
	rc, err := env.client.AllocFS().Cat(alloc, "alloc/logs/web.stdout.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello world\n" {
		t.Fatalf("cat %q", b)
	}
	rc, err = env.client.AllocFS().ReadAt(alloc, "alloc/logs/web.stdout.0", 6, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(rc)
	rc.Close()
	if string(b) != "world" {
		t.Fatalf("readat %q", b)
	}

	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/v1/client/fs/stat/a1", 400, "must provide a file name"},
		{"/v1/client/fs/cat/a1", 400, "must provide a file name"},
		{"/v1/client/fs/readat/a1?path=x&offset=abc", 400, "offset"},
		{"/v1/client/fs/ls/", 400, "alloc id"},
		{"/v1/client/fs/logs/a1?task=web&type=stdin", 400, "log type"},
		{"/v1/client/fs/logs/a1?type=stdout", 400, "task name"},
		{"/v1/client/fs/logs/a1?task=web&type=stdout&origin=middle", 400, "origin"},
		{"/v1/client/fs/logs/a1?task=nope&type=stdout", 404, "unknown task name"},
		{"/v1/client/fs/unknown/a1", 404, ""},
	} {
		if code, _, body := env.raw(t, "GET", tc.path, ""); code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %q, want %d %q", tc.path, code, body, tc.code, tc.msg)
		}
	}

	env.fs.err = structs.NewErrCoded(404, "unknown allocation")
	_, _, err = env.client.AllocFS().List(alloc, "/", nil)
	wantStatus(t, err, 404, "unknown allocation")

	noClient := newEnv(t, func(c *Config) { c.FS = nil })
	_, _, err = noClient.client.AllocFS().List(alloc, "/", nil)
	wantStatus(t, err, 400, "no client")
}

func TestFSLogsFrames(t *testing.T) {
	env := newEnv(t, nil)
	env.fs.frames = testFrames()
	alloc := &api.Allocation{ID: "a1", NodeID: "n1"}
	cancel := make(chan struct{})
	defer close(cancel)

	frames, errCh := env.client.AllocFS().Logs(alloc, false, "web", "stdout", "start", 0, cancel, nil)
	var got []*api.StreamFrame
	for f := range frames {
		got = append(got, f)
	}
	select {
	case err := <-errCh:
		t.Fatalf("logs error: %v", err)
	default:
	}
	if len(got) != 3 || string(got[0].Data) != "hello " || got[1].Offset != 6 || got[2].FileEvent != "file truncated" || got[0].File != "alloc/logs/web.stdout.0" {
		t.Fatalf("frames %+v", got)
	}

	// The wire format: concatenated JSON objects, base64 data, no newlines.
	_, hdr, body := env.raw(t, "GET", "/v1/client/fs/logs/a1?task=web&type=stdout", "")
	if strings.Contains(body, "\n") || !strings.HasPrefix(body, `{"Data":"aGVsbG8g","File":"alloc/logs/web.stdout.0"}{"Offset":6,`) {
		t.Fatalf("wire frames %q", body)
	}
	if hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("content type %q", hdr.Get("Content-Type"))
	}

	// plain=true: raw bytes only.
	_, hdr, body = env.raw(t, "GET", "/v1/client/fs/logs/a1?task=web&type=stdout&plain=true", "")
	if body != "hello world\n" || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("plain logs %q %q", body, hdr.Get("Content-Type"))
	}
}

func TestFSStreamFollowFlushesAndHeartbeats(t *testing.T) {
	old := streamHeartbeat
	streamHeartbeat = 20 * time.Millisecond
	t.Cleanup(func() { streamHeartbeat = old })

	env := newEnv(t, nil)
	env.fs.frames = testFrames()[:1]
	env.fs.follow = true

	resp, err := http.Get(env.srv.URL + "/v1/client/fs/stream/a1?path=alloc/logs/web.stdout.0&follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// The first frame arrives while the stream is still open (flushed),
	// followed by heartbeats.
	dec := json.NewDecoder(resp.Body)
	var first api.StreamFrame
	if err := dec.Decode(&first); err != nil || string(first.Data) != "hello " {
		t.Fatalf("first frame %+v %v", first, err)
	}
	var hb api.StreamFrame
	if err := dec.Decode(&hb); err != nil || !hb.IsHeartbeat() {
		t.Fatalf("heartbeat %+v %v", hb, err)
	}

	// The api client's Stream skips heartbeats and stops on cancel.
	cancel := make(chan struct{})
	frames, _ := env.client.AllocFS().Stream(&api.Allocation{ID: "a1"}, "alloc/logs/web.stdout.0", "start", 0, cancel, nil)
	select {
	case f := <-frames:
		if !bytes.Equal(f.Data, []byte("hello ")) {
			t.Fatalf("stream frame %+v", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no frame from a followed stream")
	}
	close(cancel)
}
