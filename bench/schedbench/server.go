package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/testport"
	"github.com/hashicorp/nomad/api"
)

// server is a drover server process started by the benchmark.
type server struct {
	cmd      *exec.Cmd
	dir      string
	httpAddr string
	rpcAddr  string
	logFile  *os.File
}

// buildBinary compiles ./cmd/drover of the module this benchmark lives in.
func buildBinary(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "drover")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/drover")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build: %v\n%s", err, out)
	}
	return bin, nil
}

// startServer runs `drover agent -server` in its production configuration
// (Raft log on bolt with fsync, on-disk snapshots) on free loopback ports and
// waits until it leads.
func startServer(bin, dir string, debug bool) (*server, error) {
	httpPort, rpcPort, serfPort := freePort(), freePort(), freePort()
	cfg := fmt.Sprintf(`{"ports":{"http":%d,"rpc":%d,"serf":%d},"log_level":"WARN","enable_debug":%t}`,
		httpPort, rpcPort, serfPort, debug)
	s, err := launchServer(bin, dir, []byte(cfg), httpPort, rpcPort)
	if err != nil {
		return nil, err
	}
	c, err := newAPIClient(s.httpAddr)
	if err != nil {
		s.stop()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if leader, err := c.Status().Leader(); err == nil && leader != "" {
			return s, nil
		}
		select {
		case <-ctx.Done():
			s.stop()
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			return nil, fmt.Errorf("server has no leader after 60s; log:\n%s", log)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// launchServer starts one `drover agent -server` with its config (JSON) and
// data under dir.
func launchServer(bin, dir string, cfg []byte, httpPort, rpcPort int) (*server, error) {
	cfgFile := filepath.Join(dir, "server.json")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(dir, "data")
	cmd := exec.Command(bin, "agent", "-server", "-data-dir", dataDir, "-bind", "127.0.0.1", "-config", cfgFile)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	return &server{cmd: cmd, dir: dir, logFile: logFile,
		httpAddr: fmt.Sprintf("http://127.0.0.1:%d", httpPort), rpcAddr: fmt.Sprintf("127.0.0.1:%d", rpcPort)}, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	s.logFile.Close()
}

func newAPIClient(addr string) (*api.Client, error) {
	conf := api.DefaultConfig()
	conf.Address = addr
	// The api package's default transport keeps GOMAXPROCS+1 idle
	// connections per host: with more concurrent submitters than that,
	// every other registration opened (and the server accepted) a new TCP
	// connection. Keep one per submitter, as separate clients would.
	conf.HttpClient = &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}}
	return api.NewClient(conf)
}

// freePort is a loopback port from testport: outside the kernel's ephemeral
// range, so nothing else takes it before the agent binds it.
func freePort() int { return testport.MustTake() }

// procCPU returns user+system CPU seconds of a process from /proc/<pid>/stat.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may contain spaces) start at ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks, nil
}

// clockTicks is USER_HZ, 100 on every Linux we run on.
const clockTicks = 100

// selfCPU returns this process's user+system CPU seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
