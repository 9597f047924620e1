// Command devagent measures a dev agent as a user meets it: the time from
// exec of the binary to ready (leader known, signing key served, node ready),
// and from registering one job of N raw_exec allocations (sleep 600,
// cpu 20, memory 32) to all of them running. With -driver docker the
// allocations are containers of -image (default drover-hello:local, built by
// scripts/docker-example-image.sh) run with its own entrypoint; with -driver
// podman, containers of the podman API service (default image
// localhost/drover-hello:local, built by scripts/podman-example-image.sh). With
// -driver exec they are the same sleep 600, isolated by the exec driver
// (namespaces, chroot, cgroup limits; needs root).
//
//	go run ./bench/devagent [-count 100] [-runs 3] [-json] [-driver docker|podman [-image ref] | -driver exec]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/testport"
	"github.com/hashicorp/nomad/api"
)

var driver, image string

type result struct {
	StartToReadyMs      float64 `json:"start_to_ready_ms"`
	RegisterToRunningMs float64 `json:"register_to_running_ms"`
	Count               int     `json:"count"`
}

func main() {
	count := flag.Int("count", 100, "allocations in the job")
	runs := flag.Int("runs", 3, "repetitions (median reported)")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.StringVar(&driver, "driver", "raw_exec", "task driver: raw_exec, exec, docker or podman")
	flag.StringVar(&image, "image", "", "image of the container tasks (default drover-hello:local; podman: localhost/drover-hello:local)")
	flag.Parse()
	if image == "" {
		image = "drover-hello:local"
		if driver == "podman" {
			image = "localhost/drover-hello:local"
		}
	}

	dir, err := os.MkdirTemp("", "drover-bench-")
	must(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "drover")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/drover").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	var all []result
	for i := 0; i < *runs; i++ {
		r, err := once(bin, *count)
		must(err)
		all = append(all, r)
	}
	med := median(all)
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(map[string]any{"median": med, "runs": all})
		return
	}
	fmt.Printf("dev agent start->ready:         %.0f ms (median of %d)\n", med.StartToReadyMs, len(all))
	fmt.Printf("register->running (%d %s allocs): %.0f ms (median of %d)\n", med.Count, driver, med.RegisterToRunningMs, len(all))
}

func once(bin string, count int) (result, error) {
	port := freePort()
	cfg := fmt.Sprintf(`{"ports":{"http":%d,"rpc":%d,"serf":%d},"log_level":"ERROR"}`, port, freePort(), freePort())
	cfgFile := filepath.Join(os.TempDir(), fmt.Sprintf("drover-bench-%d.json", port))
	must(os.WriteFile(cfgFile, []byte(cfg), 0o644))
	defer os.Remove(cfgFile)

	start := time.Now()
	cmd := exec.Command(bin, "agent", "-dev", "-config", cfgFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	conf := api.DefaultConfig()
	conf.Address = fmt.Sprintf("http://127.0.0.1:%d", port)
	c, err := api.NewClient(conf)
	if err != nil {
		return result{}, err
	}
	for {
		if time.Since(start) > 30*time.Second {
			return result{}, fmt.Errorf("agent not ready after 30s")
		}
		if ready(c, port) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	r := result{StartToReadyMs: ms(time.Since(start)), Count: count}

	job := api.NewServiceJob("bench", "bench", "global", 50)
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", count)
	task := api.NewTask("t", driver)
	task.Config = map[string]any{"command": "/bin/sleep", "args": []string{"600"}}
	if driver == "docker" || driver == "podman" {
		task.Config = map[string]any{"image": image}
	}
	task.Resources = &api.Resources{CPU: ptr(20), MemoryMB: ptr(32)}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	reg := time.Now()
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		return result{}, err
	}
	var idx uint64
	for {
		if time.Since(reg) > 120*time.Second {
			return result{}, fmt.Errorf("allocs not running after 120s")
		}
		s, meta, err := c.Jobs().Summary("bench", &api.QueryOptions{WaitIndex: idx, WaitTime: 5 * time.Second})
		if err == nil {
			idx = meta.LastIndex
			if s.Summary["g"].Running == count {
				break
			}
		}
	}
	r.RegisterToRunningMs = ms(time.Since(reg))
	c.Jobs().Deregister("bench", true, nil)
	return r, nil
}

func ready(c *api.Client, port int) bool {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/.well-known/jwks.json", port))
	if err != nil {
		return false
	}
	var body struct{ Keys []any }
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || len(body.Keys) == 0 {
		return false
	}
	nodes, _, err := c.Nodes().List(nil)
	return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
}

func median(rs []result) result {
	a := append([]result(nil), rs...)
	sort.Slice(a, func(i, j int) bool { return a[i].StartToReadyMs < a[j].StartToReadyMs })
	m := a[len(a)/2]
	sort.Slice(a, func(i, j int) bool { return a[i].RegisterToRunningMs < a[j].RegisterToRunningMs })
	m.RegisterToRunningMs = a[len(a)/2].RegisterToRunningMs
	return m
}

// freePort is a loopback port from testport: outside the kernel's ephemeral
// range, so nothing else takes it before the agent binds it.
func freePort() int { return testport.MustTake() }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
func ptr[T any](v T) *T          { return &v }

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
