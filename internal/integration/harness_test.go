package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/testport"
	"github.com/hashicorp/nomad/api"
)

var droverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "drover-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	droverBin = filepath.Join(dir, "drover")
	out, err := exec.Command("go", "build", "-o", droverBin, "../../cmd/drover").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building drover: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort is a port for an agent or a task to bind, from testport (outside
// the kernel's ephemeral range, never handed to two tests).
func freePort(t *testing.T) int {
	t.Helper()
	p, err := testport.Take()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// agent is a drover agent process.
type agent struct {
	t       *testing.T
	cmd     *exec.Cmd
	http    int
	rpc     int
	serf    int
	dataDir string
	args    []string
	cfgPath string
	out     *syncBuffer
	client  *api.Client
	exited  chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startAgent starts `drover agent <args> -config <generated>` with fresh
// loopback ports; extra is merged into the generated JSON config.
func startAgent(t *testing.T, dataDir string, args []string, extra map[string]any) *agent {
	t.Helper()
	a := &agent{t: t, http: freePort(t), rpc: freePort(t), serf: freePort(t), dataDir: dataDir, args: args}
	cfg := map[string]any{
		"name":      fmt.Sprintf("it-%d", a.http),
		"bind_addr": "127.0.0.1",
		"ports":     map[string]int{"http": a.http, "rpc": a.rpc, "serf": a.serf},
		"log_level": "DEBUG",
		// A client agent stopped with SIGINT leaves its tasks running
		// (Nomad's default); tests stop theirs unless they say otherwise.
		"leave_on_interrupt": true,
	}
	if dataDir != "" {
		cfg["data_dir"] = dataDir
	}
	for k, v := range extra {
		cfg[k] = v
	}
	b, _ := json.Marshal(cfg)
	a.cfgPath = filepath.Join(t.TempDir(), "agent-config") // no extension: JSON by content
	if err := os.WriteFile(a.cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	a.start()
	t.Cleanup(a.stop)
	return a
}

func (a *agent) start() {
	t := a.t
	args := append([]string{"agent"}, a.args...)
	args = append(args, "-config", a.cfgPath)
	a.cmd = exec.Command(droverBin, args...)
	a.out = &syncBuffer{}
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.exited = make(chan struct{})
	go func(cmd *exec.Cmd, ch chan struct{}) { cmd.Wait(); close(ch) }(a.cmd, a.exited)
	conf := api.DefaultConfig()
	conf.Address = fmt.Sprintf("http://127.0.0.1:%d", a.http)
	c, err := api.NewClient(conf)
	if err != nil {
		t.Fatal(err)
	}
	a.client = c
}

// stop interrupts the agent and waits for it (SIGKILL after 10 s).
func (a *agent) stop() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	select {
	case <-a.exited:
		return
	default:
	}
	a.cmd.Process.Signal(os.Interrupt)
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.exited
	}
	if a.t.Failed() {
		a.t.Logf("agent output (its HTTP request lines left out):\n%s", tail(withoutRequestLines(a.out.String()), 80))
	}
}

// interrupt stops the agent with SIGINT as stop does, but fails the test
// when it has not exited within d instead of killing it: for tests that
// check what a clean shutdown did (a leave, a drain), which stop's 10 s
// could cut short on a loaded machine.
func (a *agent) interrupt(d time.Duration) {
	a.t.Helper()
	if err := a.cmd.Process.Signal(os.Interrupt); err != nil {
		a.t.Fatal(err)
	}
	select {
	case <-a.exited:
	case <-time.After(d):
		a.t.Fatalf("the agent did not exit within %s of SIGINT:\n%s", d, tail(a.out.String(), 60))
	}
}

// kill SIGKILLs the agent (no clean shutdown).
func (a *agent) kill() {
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.exited
}

// withoutRequestLines drops the agent's DEBUG line for each HTTP request: a
// test polling the API writes fifty a second, and a failed test's tail of
// the log was nothing else (the lines that said what went wrong scrolled
// away).
func withoutRequestLines(s string) string {
	lines := strings.Split(s, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if !strings.Contains(l, "agent.http.http: request complete") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (a *agent) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", a.http, path) }

// waitReady waits for a leader with a signing key (and a ready node when the
// agent runs a client).
func (a *agent) waitReady(withNode bool) {
	a.t.Helper()
	waitFor(a.t, 20*time.Second, "agent ready", func() bool {
		select {
		case <-a.exited:
			a.t.Fatalf("agent exited:\n%s", tail(a.out.String(), 40))
		default:
		}
		if len(a.jwksKeys()) == 0 {
			return false
		}
		if !withNode {
			return true
		}
		nodes, _, err := a.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
}

func (a *agent) jwksKeys() []string {
	resp, err := http.Get(a.url("/.well-known/jwks.json"))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&body) != nil {
		return nil
	}
	var out []string
	for _, k := range body.Keys {
		out = append(out, k.Kid)
	}
	return out
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func devAgent(t *testing.T) *agent {
	a := startAgent(t, "", []string{"-dev"}, nil)
	a.waitReady(true)
	return a
}

func rawExecJob(id, typ string, count int, script string) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Type = &typ
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", count)
	task := api.NewTask("t", "raw_exec")
	task.Config = map[string]any{"command": "/bin/sh", "args": []string{"-c", script}}
	task.Resources = &api.Resources{CPU: ptr(20), MemoryMB: ptr(32)}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	return job
}

func ptr[T any](v T) *T { return &v }

func (a *agent) allocsOf(jobID string) []*api.AllocationListStub {
	allocs, _, err := a.client.Jobs().Allocations(jobID, true, nil)
	if err != nil {
		a.t.Fatalf("allocations of %s: %v", jobID, err)
	}
	return allocs
}

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// state is the field after the ")" that closes the command name
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}
