// Command evstall measures what a stalled event stream reader costs job
// registration: it starts `drover agent -server` (Raft on bolt with fsync)
// on free loopback ports, then alternates rounds of -jobs sequential job
// registrations without and with a reader of /v1/event/stream (every topic
// and namespace) that never reads, its receive buffer shrunk so the
// server's writes to it block once the server's own socket buffer is
// full. It prints each round's latency percentiles, and how and when
// (seconds after the stall began) the server dropped each stalled reader.
//
//	go run ./bench/evstall [-jobs 3000] [-rounds 2] [-json]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/testport"
	"github.com/hashicorp/nomad/api"
)

type round struct {
	Stalled bool    `json:"stalled_reader"`
	Jobs    int     `json:"jobs"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	// For a stalled round: how the server ended the reader's stream
	// ("error line" or "closed") and how long after the stall began.
	Dropped      string  `json:"dropped,omitempty"`
	DroppedAfter float64 `json:"dropped_after_s,omitempty"`
}

func main() {
	jobs := flag.Int("jobs", 3000, "sequential registrations per round")
	rounds := flag.Int("rounds", 2, "rounds of each kind, alternated")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Parse()
	if err := run(*jobs, *rounds, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "evstall:", err)
		os.Exit(1)
	}
}

func run(jobs, rounds int, asJSON bool) error {
	dir, err := os.MkdirTemp("", "drover-evstall-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "drover")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/drover").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, out)
	}
	httpPort, rpcPort, serfPort := freePort(), freePort(), freePort()
	cfg := fmt.Sprintf(`{"ports":{"http":%d,"rpc":%d,"serf":%d},"log_level":"WARN"}`, httpPort, rpcPort, serfPort)
	cfgFile := filepath.Join(dir, "server.json")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(bin, "agent", "-server", "-data-dir", filepath.Join(dir, "data"), "-bind", "127.0.0.1", "-config", cfgFile)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Signal(syscall.SIGINT); cmd.Wait() }()
	addr := fmt.Sprintf("127.0.0.1:%d", httpPort)
	conf := api.DefaultConfig()
	conf.Address = "http://" + addr
	c, err := api.NewClient(conf)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if l, err := c.Status().Leader(); err == nil && l != "" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no leader after 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var out []round
	n := 0
	for r := 0; r < rounds; r++ {
		for _, stalled := range []bool{false, true} {
			var conn *net.TCPConn
			var stallStart time.Time
			if stalled {
				if conn, err = stalledReader(addr); err != nil {
					return err
				}
				stallStart = time.Now()
			}
			lat := make([]time.Duration, 0, jobs)
			for i := 0; i < jobs; i++ {
				job := api.NewServiceJob(fmt.Sprintf("stall-%06d", n), "stall", "global", 50)
				n++
				job.Datacenters = []string{"*"}
				tg := api.NewTaskGroup("g", 1)
				task := api.NewTask("t", "raw_exec")
				task.Config = map[string]any{"command": "/bin/sleep", "args": []string{"600"}}
				tg.AddTask(task)
				job.AddTaskGroup(tg)
				t0 := time.Now()
				if _, _, err := c.Jobs().Register(job, nil); err != nil {
					return err
				}
				lat = append(lat, time.Since(t0))
			}
			rd := summarize(stalled, lat)
			if stalled {
				rd.Dropped, rd.DroppedAfter = awaitDrop(conn, httpPort, stallStart)
			}
			out = append(out, rd)
		}
	}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	for _, r := range out {
		fmt.Printf("stalled=%-5v jobs=%d p50=%.2fms p99=%.2fms max=%.2fms %s %.1fs\n",
			r.Stalled, r.Jobs, r.P50Ms, r.P99Ms, r.MaxMs, r.Dropped, r.DroppedAfter)
	}
	return nil
}

// stalledReader asks for every event and never reads. Its receive buffer
// is shrunk before connecting, so the server's writes block within a few
// kilobytes.
func stalledReader(addr string) (*net.TCPConn, error) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := conn.(*net.TCPConn)
	req := "GET /v1/event/stream?namespace=*&index=1 HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	if _, err := io.WriteString(tc, req); err != nil {
		return nil, err
	}
	return tc, nil
}

// awaitDrop waits, without reading, until the server's side of the
// stalled reader's connection leaves ESTABLISHED (/proc/net/tcp): the
// server dropped it. Then it reads what was delivered: "error line" when
// the last line is the server's {"Error":...}, "closed" when the stream
// ends without one, "not dropped" when the server kept it 90 s.
func awaitDrop(conn *net.TCPConn, httpPort int, since time.Time) (string, float64) {
	defer conn.Close()
	client := conn.LocalAddr().(*net.TCPAddr).Port
	deadline := time.Now().Add(90 * time.Second)
	for serverSideEstablished(httpPort, client) {
		if time.Now().After(deadline) {
			return "not dropped", time.Since(since).Seconds()
		}
		time.Sleep(100 * time.Millisecond)
	}
	after := time.Since(since).Seconds()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "closed", after
	}
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	var last string
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			last = line
		}
		if err != nil {
			break
		}
	}
	if strings.HasPrefix(last, `{"Error"`) {
		return "error line", after
	}
	return "closed", after
}

// serverSideEstablished reports whether the server's socket from port
// httpPort to the client's port is still ESTABLISHED.
func serverSideEstablished(httpPort, clientPort int) bool {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false
	}
	local := fmt.Sprintf(":%04X", httpPort)
	remote := fmt.Sprintf(":%04X", clientPort)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[1], local) && strings.HasSuffix(f[2], remote) {
			return f[3] == "01"
		}
	}
	return false
}

func summarize(stalled bool, lat []time.Duration) round {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	return round{Stalled: stalled, Jobs: len(lat), P50Ms: ms(pct(0.5)), P99Ms: ms(pct(0.99)), MaxMs: ms(lat[len(lat)-1])}
}

// freePort is a loopback port from testport: outside the kernel's ephemeral
// range, so nothing else takes it before the agent binds it.
func freePort() int { return testport.MustTake() }
