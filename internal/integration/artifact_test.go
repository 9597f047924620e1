package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// artifactScript records each start's pid in the task dir, then sleeps.
const artifactScript = "#!/bin/sh\necho $$ >> \"$NOMAD_TASK_DIR/starts\"\nexec sleep 3600\n"

func artifactTarGz(t *testing.T) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, h := range []*tar.Header{
		{Name: "app/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "app/run.sh", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(artifactScript))},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(artifactScript))
		}
	}
	tw.Close()
	zw.Close()
	return b.Bytes()
}

// An artifact block end to end, with real agents and raw_exec tasks: a
// tar.gz served over http (source and destination interpolated with the
// job's meta and the node's attributes, a header sent) is fetched, checked
// against its sha256 and unpacked before the task runs the script in it; a
// bad checksum gives Failed Artifact Download and a restart, then the
// allocation fails; a client agent killed and started again re-attaches
// the task, and neither that nor a restart of the task fetches again.
func TestArtifactEndToEnd(t *testing.T) {
	archive := artifactTarGz(t)
	sum := sha256.Sum256(archive)
	var mu sync.Mutex
	gets := map[string]int{}
	auth := map[string]string{}
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gets[r.URL.Path]++
		auth[r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
		w.Write(archive)
	}))
	defer files.Close()
	count := func(p string) int {
		mu.Lock()
		defer mu.Unlock()
		return gets[p]
	}

	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	t.Cleanup(func() { killProcsUnder(clientDir) })
	cli := startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"plugin":             map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		"client":             map[string]any{"artifact": map[string]any{"http_max_size": "1MB", "decompression_file_count_limit": 10}},
		"leave_on_interrupt": false,
		"log_level":          "INFO",
	})
	waitFor(t, 20*time.Second, "client node ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})

	job := func(id, checksum string) *api.Job {
		j := rawExecJob(id, "service", 1, "")
		j.Meta = map[string]string{"archive": id + ".tar.gz"}
		tg := j.TaskGroups[0]
		tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(1), Mode: ptr("fail"), Interval: ptr(time.Hour), Delay: ptr(time.Second)}
		tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: ptr(0), Unlimited: ptr(false)}
		task := tg.Tasks[0]
		task.Config = map[string]any{"command": "/bin/sh", "args": []string{"${NOMAD_TASK_DIR}/${attr.kernel.name}/app/run.sh"}}
		task.Artifacts = []*api.TaskArtifact{{
			GetterSource:  ptr(files.URL + "/${NOMAD_META_archive}"),
			GetterOptions: map[string]string{"checksum": checksum},
			GetterHeaders: map[string]string{"Authorization": "Bearer ${NOMAD_JOB_ID}"},
			RelativeDest:  ptr("local/${attr.kernel.name}"),
		}}
		return j
	}
	good := "sha256:" + hex.EncodeToString(sum[:])
	bad := "sha256:" + strings.Repeat("0", 64)
	for _, j := range []*api.Job{job("art", good), job("art-bad", bad)} {
		if resp, _, err := srv.client.Jobs().Register(j, nil); err != nil {
			t.Fatal(err)
		} else if resp.Warnings != "" {
			t.Errorf("%s: warnings %q", *j.ID, resp.Warnings)
		}
	}

	var alloc *api.AllocationListStub
	waitFor(t, 60*time.Second, "art running", func() bool {
		for _, a := range srv.allocsOf("art") {
			if a.ClientStatus == "running" {
				alloc = a
				return true
			}
		}
		return false
	})
	startsFile := filepath.Join(clientDir, "client", "alloc", alloc.ID, "t", "local", "starts")
	pids := func() []int {
		b, _ := os.ReadFile(startsFile)
		var out []int
		for _, l := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(l)
			out = append(out, n)
		}
		return out
	}
	// The script execs sleep, whose command line does not name the
	// client dir (killProcsUnder's test): its pids are killed here.
	t.Cleanup(func() {
		for _, p := range pids() {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	waitFor(t, 20*time.Second, "the fetched script ran", func() bool { return len(pids()) == 1 })
	if _, err := os.Stat(filepath.Join(clientDir, "client", "alloc", alloc.ID, "t", "local", "linux", "app", "run.sh")); err != nil {
		t.Errorf("the archive was not unpacked to local/linux: %v", err)
	}
	mu.Lock()
	if gets["/art.tar.gz"] != 1 || auth["/art.tar.gz"] != "Bearer art" {
		t.Errorf("GETs %v, Authorization %q: want one GET with the interpolated header", gets, auth["/art.tar.gz"])
	}
	mu.Unlock()
	full, _, err := srv.client.Allocations().Info(alloc.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !hasTaskEvent(full.TaskStates["t"], "Downloading Artifacts") {
		t.Errorf("no Downloading Artifacts event: %v", eventList(full.TaskStates["t"]))
	}

	// The bad checksum: Failed Artifact Download, one restart, then failed.
	waitFor(t, 60*time.Second, "art-bad failed", func() bool {
		as := srv.allocsOf("art-bad")
		return len(as) == 1 && as[0].ClientStatus == "failed"
	})
	badAlloc, _, err := srv.client.Allocations().Info(srv.allocsOf("art-bad")[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := badAlloc.TaskStates["t"]
	var failed *api.TaskEvent
	for _, e := range ts.Events {
		if e.Type == "Failed Artifact Download" {
			failed = e
		}
	}
	if failed == nil || !strings.Contains(failed.DownloadError, "checksums did not match") || !hasTaskEvent(ts, "Restarting") || ts.Restarts != 1 || !ts.Failed {
		t.Fatalf("art-bad: restarts %d failed %v events %v; download error %+v", ts.Restarts, ts.Failed, eventList(ts), failed)
	}
	if hasTaskEvent(ts, "Started") {
		t.Error("art-bad started without its artifact")
	}
	if n := count("/art-bad.tar.gz"); n != 2 {
		t.Errorf("art-bad fetched %d times, want 2 (first try and one restart)", n)
	}

	// The client agent dies and comes back: the task is re-attached, not
	// fetched again; then the task dies and is restarted, still without a
	// fetch.
	cli.kill()
	cli.start()
	waitFor(t, 30*time.Second, "client ready again", func() bool {
		n, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(n) == 1 && n[0].Status == "ready"
	})
	first := pids()[0]
	if !pidAlive(first) {
		t.Fatal("the task died with its client agent")
	}
	waitFor(t, 30*time.Second, "the restored client reports the task", func() bool {
		a, _, err := srv.client.Allocations().Info(alloc.ID, nil)
		return err == nil && a.ClientStatus == "running" && hasTaskEvent(a.TaskStates["t"], "Started")
	})
	syscall.Kill(first, syscall.SIGKILL)
	waitFor(t, 60*time.Second, "the task restarted", func() bool { return len(pids()) == 2 && pidAlive(pids()[1]) })
	if n := count("/art.tar.gz"); n != 1 {
		t.Errorf("art fetched %d times after a client restart and a task restart, want 1", n)
	}
	a, _, err := srv.client.Allocations().Info(alloc.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := countEvents(a.TaskStates["t"], "Downloading Artifacts"); n != 1 {
		t.Errorf("%d Downloading Artifacts events, want 1: %v", n, eventList(a.TaskStates["t"]))
	}
}

func hasTaskEvent(ts *api.TaskState, typ string) bool { return countEvents(ts, typ) > 0 }

func countEvents(ts *api.TaskState, typ string) int {
	if ts == nil {
		return 0
	}
	n := 0
	for _, e := range ts.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func eventList(ts *api.TaskState) []string {
	if ts == nil {
		return nil
	}
	var out []string
	for _, e := range ts.Events {
		out = append(out, e.Type+": "+e.DisplayMessage)
	}
	return out
}
