package integration

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// `drover ui` prints (or opens) the page of the job, allocation or node an
// identifier names, and that page is served; a bad identifier says so.
func TestUICommandURLs(t *testing.T) {
	a := devAgent(t)
	job := rawExecJob("uicli", "service", 1, "sleep 300")
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the allocation", func() bool { return len(a.allocsOf("uicli")) == 1 })
	alloc := a.allocsOf("uicli")[0]
	nodes, _, err := a.client.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes %v %v", nodes, err)
	}
	dir := t.TempDir()
	for _, c := range []struct{ arg, path string }{
		{"", "/ui/jobs"},
		{"uicli", "/ui/jobs/uicli"},
		{alloc.ID[:8], "/ui/allocations/" + alloc.ID},
		{nodes[0].ID[:8], "/ui/clients/" + nodes[0].ID},
	} {
		args := []string{"ui", "-show-url"}
		if c.arg != "" {
			args = append(args, c.arg)
		}
		out, code := a.cli(dir, args...)
		want := "URL for web UI: " + a.url(c.path)
		if code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("ui %s: exit %d %q, want %q", c.arg, code, out, want)
			continue
		}
		resp, err := http.Get(a.url(c.path))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `src="/ui/app.js"`) {
			t.Errorf("GET %s: %d, not the UI", c.path, resp.StatusCode)
		}
	}
	// Without a browser opener the URL is printed.
	cmdOut, code := a.cliEnvIn(dir, []string{"PATH=/nonexistent"}, "ui", "uicli")
	if code != 0 || !strings.Contains(cmdOut, a.url("/ui/jobs/uicli")) {
		t.Errorf("ui without an opener: exit %d %q", code, cmdOut)
	}
	out, code := a.cli(dir, "ui", "-show-url", "no-such-thing")
	if code != 1 || !strings.Contains(out, `No job, allocation or node matches "no-such-thing"`) {
		t.Errorf("unknown identifier: exit %d %q", code, out)
	}
}

// cliEnvIn is cli in dir with extra environment (later entries win).
func (a *agent) cliEnvIn(dir string, env []string, args ...string) (string, int) {
	a.t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(cmd.Environ(), "NOMAD_ADDR="+a.url("")), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		a.t.Fatalf("%v: %v", args, err)
	}
	return string(out), code
}
