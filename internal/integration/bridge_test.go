package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/testnet"
)

// requireBridge skips unless this machine can run bridge networks (root,
// ip, iptables), but fails when CI=true.
func requireBridge(t *testing.T) {
	t.Helper()
	var why string
	if os.Geteuid() != 0 {
		why = "bridge networking needs root"
	}
	for _, tool := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil && why == "" {
			why = "bridge networking needs " + tool
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", why)
	}
	t.Skip(why)
}

// helloSrc is a tiny HTTP server a bridge task runs on port 8080: it
// answers with its allocation ID, NOMAD_ALLOC_IP_http and the names of the
// interfaces it sees.
const helloSrc = `package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		ifs, _ := net.Interfaces()
		var names []string
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		fmt.Fprintf(w, "%s %s %s\n", os.Getenv("NOMAD_ALLOC_ID"), os.Getenv("NOMAD_ALLOC_IP_http"), strings.Join(names, ","))
	})
	if err := http.ListenAndServe(":8080", nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

func buildHello(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(helloSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build hello: %v\n%s", err, out)
	}
	return bin
}

// hostPort is the host address and port of an allocation's "http" port.
func hostPort(t *testing.T, c *api.Client, allocID string) string {
	t.Helper()
	a, _, err := c.Allocations().Info(allocID, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.AllocatedResources.Shared.Ports {
		if p.Label == "http" {
			if p.To != 8080 {
				t.Fatalf("port http maps to %d, want 8080", p.To)
			}
			return fmt.Sprintf("%s:%d", p.HostIP, p.Value)
		}
	}
	t.Fatalf("allocation %s has no http port: %+v", allocID, a.AllocatedResources.Shared.Ports)
	return ""
}

func get(addr string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b)), err
}

func netnsInode(t *testing.T, allocID string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/var/run/netns/"+allocID, &st); err != nil {
		t.Fatalf("network namespace of %s: %v", allocID, err)
	}
	return st.Ino
}

func cmdOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// A raw_exec task in a bridge group serves port to = 8080 inside its own
// network namespace: two allocations get distinct addresses from the
// configured subnet and each answers on the host's address and its own
// host port, seeing only eth0 and lo. A client agent SIGKILLed and
// restarted keeps the namespaces (same inode) and the tasks reachable;
// stopping the job removes namespaces, veths and port mappings.
func TestBridgeRawExec(t *testing.T) {
	requireBridge(t)
	hello := buildHello(t)
	nw := testnet.Claim(t) // bridge and subnet of this run alone
	br, subnet := nw.Bridge, nw.Subnet
	cleanupBridge(t, br, subnet)

	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	t.Cleanup(func() { killProcsUnder(clientDir) })
	cli := startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"plugin":             map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		"client":             map[string]any{"bridge_network_name": br, "bridge_network_subnet": subnet},
		"leave_on_interrupt": false,
		"log_level":          "INFO",
	})
	var nodeID string
	waitFor(t, 20*time.Second, "client node ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		if err == nil && len(nodes) == 1 && nodes[0].Status == "ready" {
			nodeID = nodes[0].ID
			return true
		}
		return false
	})
	node, _, err := srv.client.Nodes().Info(nodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if node.Attributes["plugins.cni.version.bridge"] == "" {
		t.Fatalf("node does not advertise bridge networking: %v", node.Attributes)
	}

	job := rawExecJob("bridge", "service", 2, "")
	tg := job.TaskGroups[0]
	tg.Networks = []*api.NetworkResource{{Mode: "bridge", DynamicPorts: []api.Port{{Label: "http", To: 8080}}}}
	tg.Tasks[0].Config = map[string]any{"command": hello}
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	allocs := waitAllocsRunning(t, srv, "bridge", 2, 60*time.Second)

	addrs := map[string]string{} // alloc ID -> host addr
	ips := map[string]string{}   // alloc ID -> alloc IP
	for _, a := range allocs {
		h := checkHello(t, srv.client, a.ID, nw.Prefix, subnet)
		addrs[a.ID] = h.addr
		ips[a.ID] = h.ip
		if h.alloc.NetworkStatus.InterfaceName != "eth0" {
			t.Fatalf("allocation's network status %+v, want eth0 %s", h.alloc.NetworkStatus, h.ip)
		}
	}
	if ips[allocs[0].ID] == ips[allocs[1].ID] {
		t.Fatalf("both allocations got address %s", ips[allocs[0].ID])
	}
	// `alloc exec` runs in the allocation's namespace too: /proc/net/dev
	// lists the reader's namespace's interfaces.
	out, code := cli.cli("", "alloc", "exec", "-i=false", "-t=false", allocs[0].ID, "/bin/cat", "/proc/net/dev")
	var ifs []string
	for _, l := range strings.Split(out, "\n") {
		if name, _, ok := strings.Cut(l, ":"); ok && !strings.Contains(name, "|") {
			ifs = append(ifs, strings.TrimSpace(name))
		}
	}
	if code != 0 || strings.Join(ifs, ",") != "lo,eth0" && strings.Join(ifs, ",") != "eth0,lo" {
		t.Fatalf("alloc exec saw interfaces %v (exit %d):\n%s", ifs, code, out)
	}

	// SIGKILL the client agent and start it again: same namespaces, and
	// the tasks answer throughout.
	restartClientAgent(t, cli, allocs, func() {
		for id, addr := range addrs {
			if body, err := get(addr); err != nil || !strings.HasPrefix(body, id) {
				t.Fatalf("with the agent down, %s answered %q, %v", addr, body, err)
			}
		}
	})
	for _, a := range allocs {
		if body, err := get(addrs[a.ID]); err != nil || body != fmt.Sprintf("%s %s lo,eth0", a.ID, ips[a.ID]) {
			t.Fatalf("after the restart %s answered %q, %v", addrs[a.ID], body, err)
		}
	}
	if n := len(srv.allocsOf("bridge")); n != 2 {
		t.Fatalf("%d allocations after the restart, want the same 2", n)
	}

	// Stopping the job removes namespaces, veths and port mappings.
	if _, _, err := srv.client.Jobs().Deregister("bridge", false, nil); err != nil {
		t.Fatal(err)
	}
	waitBridgeGone(t, br, "namespaces, veths and port mappings gone", 30*time.Second, allocs, func(allocID string) bool {
		return !strings.Contains(cmdOut(t, "iptables", "-w", "-t", "nat", "-S"), allocID)
	})
	for addr := range addrs {
		if _, err := get(addrs[addr]); err == nil {
			t.Fatalf("%s still answers after the job stopped", addrs[addr])
		}
	}
}

// An exec task of a bridge group joins the group's namespace too: it
// answers on the host port and sees only eth0 and lo.
func TestBridgeExec(t *testing.T) {
	requireBridge(t)
	hello := buildHello(t)
	nw := testnet.Claim(t) // bridge and subnet of this run alone
	br, subnet := nw.Bridge, nw.Subnet
	cleanupBridge(t, br, subnet)
	a := startAgent(t, "", []string{"-dev"}, map[string]any{
		"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		"client": map[string]any{"bridge_network_name": br, "bridge_network_subnet": subnet},
	})
	a.waitReady(true)
	requireExecDriver(t, a, "exec")

	// Batch: Drover restarts a prestart task that completed in a service
	// job (Nomad does not), which is not what this test is about.
	job := api.NewBatchJob("bridge-exec", "bridge-exec", "global", 50)
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", 1)
	tg.Networks = []*api.NetworkResource{{Mode: "bridge", DynamicPorts: []api.Port{{Label: "http", To: 8080}}}}
	// The exec task's root holds the alloc dir, not the test's temp dir:
	// a prestart task copies the server there.
	cp := api.NewTask("copy", "raw_exec")
	cp.Config = map[string]any{"command": "/bin/cp", "args": []string{hello, "${NOMAD_ALLOC_DIR}/hello"}}
	cp.Lifecycle = &api.TaskLifecycle{Hook: "prestart"}
	cp.Resources = &api.Resources{CPU: ptr(20), MemoryMB: ptr(32)}
	task := api.NewTask("t", "exec")
	task.Config = map[string]any{"command": "/alloc/hello"}
	task.Resources = &api.Resources{CPU: ptr(50), MemoryMB: ptr(64)}
	tg.AddTask(cp)
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var alloc *api.AllocationListStub
	waitFor(t, 60*time.Second, "allocation running", func() bool {
		for _, s := range a.allocsOf("bridge-exec") {
			if s.ClientStatus == "running" {
				alloc = s
				return true
			}
			if s.ClientStatus == "failed" {
				var msgs []string
				for name, ts := range s.TaskStates {
					for _, ev := range ts.Events {
						msgs = append(msgs, name+": "+ev.Type+" "+ev.DisplayMessage)
					}
				}
				t.Fatalf("allocation failed:\n%s\nstderr: %s", strings.Join(msgs, "\n"), a.catLog(s.ID, "t", "stderr"))
			}
		}
		return false
	})
	addr := hostPort(t, a.client, alloc.ID)
	var body string
	var err error
	waitFor(t, 20*time.Second, "exec task answering on "+addr, func() bool {
		body, err = get(addr)
		return err == nil
	})
	f := strings.Fields(body)
	if len(f) != 3 || f[0] != alloc.ID || !strings.HasPrefix(f[1], nw.Prefix) || f[2] != "lo,eth0" {
		t.Fatalf("exec task answered %q, want %s, an address of %s and lo,eth0", body, alloc.ID, subnet)
	}
	if _, _, err := a.client.Jobs().Deregister("bridge-exec", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "namespace gone", func() bool {
		_, err := os.Stat("/var/run/netns/" + alloc.ID)
		return err != nil
	})
}
