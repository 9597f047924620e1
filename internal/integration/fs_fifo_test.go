package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A task that makes named pipes in its alloc dir (and the log collector's
// own FIFOs there) cannot make the fs API hang: cat, readat, stream and logs
// on a FIFO answer 400 at once, the agent does not gain a thread per
// request, and no error body names the host path of the alloc dir.
func TestFSOnNamedPipesAnswersAtOnce(t *testing.T) {
	a := devAgent(t)
	script := `set -e
d="$NOMAD_ALLOC_DIR"
mkfifo "$d/data/pipe"
ln -s pipe "$d/data/to-pipe"
ln -s /etc/passwd "$d/data/passwd"
rm -f "$d/logs/t.stderr.0"
mkfifo "$d/logs/t.stderr.0"
mkfifo "$d/logs/.t.stdout.fifo" # where a log collector's FIFO would be (raw_exec's shim uses pipes)
echo "$d" > "$d/data/where"
exec sleep 3600`
	if _, _, err := a.client.Jobs().Register(rawExecJob("fifo", "service", 1, script), nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 30*time.Second, "fifo alloc running", func() bool {
		stubs := a.allocsOf("fifo")
		if len(stubs) == 1 && stubs[0].ClientStatus == "running" {
			allocID = stubs[0].ID
			return true
		}
		return false
	})
	// A hang is the failure (a FIFO read that never returns); 15 s is far
	// from a loaded machine's slowest answer.
	httpc := &http.Client{Timeout: 15 * time.Second}
	get := func(path string) (int, string, error) {
		resp, err := httpc.Get(a.url(path))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	fs := func(op, path, extra string) string {
		return fmt.Sprintf("/v1/client/fs/%s/%s?path=%s%s", op, allocID, url.QueryEscape(path), extra)
	}
	var hostAllocDir string
	waitFor(t, 20*time.Second, "the task's setup done", func() bool {
		code, body, err := get(fs("cat", "alloc/data/where", ""))
		hostAllocDir = strings.TrimSpace(body)
		return err == nil && code == 200 && hostAllocDir != ""
	})
	// <allocRoot>: the client's data dir, holding every allocation.
	hostRoot := filepath.Dir(filepath.Dir(hostAllocDir))
	if !filepath.IsAbs(hostRoot) || hostRoot == "/" {
		t.Fatalf("odd alloc dir %q", hostAllocDir)
	}

	cases := []struct {
		path string
		code int
		want string
	}{
		{fs("cat", "alloc/data/pipe", ""), 400, `"alloc/data/pipe" is a named pipe, not a regular file`},
		{fs("readat", "/alloc/data/pipe", "&offset=0&limit=10"), 400, `"alloc/data/pipe" is a named pipe`},
		{fs("stream", "alloc/data/pipe", "&follow=true"), 400, `"alloc/data/pipe" is a named pipe`},
		{fs("stream", "alloc/data/to-pipe", "&follow=false"), 400, `"alloc/data/to-pipe" is a named pipe`},
		{fs("cat", "alloc/logs/.t.stdout.fifo", ""), 400, `"alloc/logs/.t.stdout.fifo" is a named pipe`},
		{"/v1/client/fs/logs/" + allocID + "?task=t&type=stderr&follow=true", 400, `"alloc/logs/t.stderr.0" is a named pipe`},
		{fs("cat", "alloc/data/passwd", ""), 400, "escapes the allocation directory"},
		{fs("cat", "alloc/data/missing", ""), 404, "alloc/data/missing"},
		{fs("ls", "alloc/data/where", ""), 400, "not a directory"},
	}
	threads := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Threads:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
		t.Fatal("no Threads line in /proc/<pid>/status")
		return 0
	}
	before := threads()
	const rounds = 5 // 45 requests
	for i := 0; i < rounds; i++ {
		for _, c := range cases {
			start := time.Now()
			code, body, err := get(c.path)
			if err != nil {
				t.Fatalf("GET %s: %v (after %v)", c.path, err, time.Since(start))
			}
			if code != c.code || !strings.Contains(body, c.want) {
				t.Fatalf("GET %s: %d %q; want %d with %q", c.path, code, body, c.code, c.want)
			}
			if strings.Contains(body, hostRoot) {
				t.Fatalf("GET %s: body names the host path %s: %q", c.path, hostRoot, body)
			}
		}
	}
	// Each hung request used to pin an OS thread (12 -> 41 for 30
	// requests): 45 requests would add about 45. The runtime adds a few
	// for the agent's other blocking calls on a loaded machine, so the
	// bound is 15, well apart from both.
	after := threads()
	t.Logf("agent threads: %d before, %d after %d fs requests", before, after, rounds*len(cases))
	if after > before+15 {
		t.Fatalf("agent threads grew from %d to %d over %d fs requests", before, after, rounds*len(cases))
	}
}
