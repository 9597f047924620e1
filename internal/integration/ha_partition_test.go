package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/testnet"
)

// netnsServer is a server agent running in its own network namespace.
type netnsServer struct {
	ns, ip string
	cmd    *exec.Cmd
	exited chan struct{}
	out    *syncBuffer
	client *api.Client
}

// requireRootNet fails under CI (and skips elsewhere) unless the test can
// create network namespaces.
func requireRootNet(t *testing.T) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "network namespaces need root"
	}
	for _, tool := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil && why == "" {
			why = tool + " is not installed (apt-get install iproute2 iptables)"
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("partition test cannot run: %s", why)
	}
	t.Skipf("partition test skipped: %s", why)
}

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func shQuiet(args ...string) { exec.Command(args[0], args[1:]...).Run() }

// netLAN builds a bridge with the host on it and one namespace per server,
// removed at cleanup. Bridge, subnet and namespace names are this run's
// network slot's: another run of the test at once has its own.
func netLAN(t *testing.T, n int) (nss, ips []string) {
	nw := testnet.Claim(t)
	bridge := nw.Bridge
	sh(t, "ip", "link", "add", bridge, "type", "bridge")
	t.Cleanup(func() { shQuiet("ip", "link", "del", bridge) })
	sh(t, "ip", "addr", "add", nw.Addr(1)+"/24", "dev", bridge)
	sh(t, "ip", "link", "set", bridge, "up")
	// Docker's FORWARD policy drops bridged traffic when br_netfilter is on.
	sh(t, "iptables", "-I", "FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT")
	t.Cleanup(func() { shQuiet("iptables", "-D", "FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT") })
	for i := 0; i < n; i++ {
		ns, veth, ip := nw.Name("hj", i), nw.Name("vhj", i), nw.Addr(10+i)
		shQuiet("ip", "netns", "del", ns) // left by a crashed run holding this slot
		sh(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { shQuiet("ip", "netns", "del", ns) })
		sh(t, "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
		sh(t, "ip", "link", "set", veth, "master", bridge, "up")
		sh(t, "ip", "-n", ns, "addr", "add", ip+"/24", "dev", "eth0")
		sh(t, "ip", "-n", ns, "link", "set", "eth0", "up")
		sh(t, "ip", "-n", ns, "link", "set", "lo", "up")
		nss, ips = append(nss, ns), append(ips, ip)
	}
	return nss, ips
}

func startNetnsServer(t *testing.T, ns, ip string, joins []string) *netnsServer {
	cfg := map[string]any{
		"name": ns, "bind_addr": ip, "data_dir": t.TempDir(), "log_level": "DEBUG",
		"server": map[string]any{"enabled": true, "bootstrap_expect": 3,
			"server_join": map[string]any{"retry_join": joins, "retry_interval": "1s"}},
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "agent-config")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &netnsServer{ns: ns, ip: ip, out: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command("ip", "netns", "exec", ns, droverBin, "agent", "-config", path)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	conf := api.DefaultConfig()
	conf.Address = fmt.Sprintf("http://%s:4646", ip)
	conf.HttpClient = nil
	c, err := api.NewClient(conf)
	if err != nil {
		t.Fatal(err)
	}
	s.client = c
	t.Cleanup(func() {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		if t.Failed() {
			t.Logf("server %s output:\n%s", ns, tail(s.out.String(), 50))
		}
	})
	return s
}

// cutOff drops every packet between s and the other servers (the host
// still reaches it).
func cutOff(t *testing.T, s *netnsServer, others []*netnsServer, on bool) {
	op := "-I"
	if !on {
		op = "-D"
	}
	for _, o := range others {
		sh(t, "ip", "netns", "exec", s.ns, "iptables", op, "INPUT", "-s", o.ip, "-j", "DROP")
		sh(t, "ip", "netns", "exec", s.ns, "iptables", op, "OUTPUT", "-d", o.ip, "-j", "DROP")
	}
}

func leaderOf(s *netnsServer) string {
	l, err := s.client.Status().Leader()
	if err != nil {
		return ""
	}
	return l
}

func raftLastIndex(s *netnsServer) string {
	self, err := s.client.Agent().Self()
	if err != nil {
		return ""
	}
	return self.Stats["raft"]["last_log_index"]
}

func nsJobIDs(s *netnsServer) []string {
	jobs, _, err := s.client.Jobs().List(&api.QueryOptions{AllowStale: true})
	if err != nil {
		return nil
	}
	var out []string
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	sort.Strings(out)
	return out
}

// Three servers in separate network namespaces; the leader is cut off from
// the other two. It cannot commit and says so (a write through it fails
// with "No cluster leader" and it gives up leadership); the majority elects
// a leader and keeps serving writes. Healed, the cut-off server catches up:
// the same jobs and the same Raft last index everywhere, and the write it
// refused is nowhere.
func TestHAPartition(t *testing.T) {
	requireRootNet(t)
	nss, ips := netLAN(t, 3)
	var joins []string
	for _, ip := range ips {
		joins = append(joins, ip+":4648")
	}
	var servers []*netnsServer
	for i := range nss {
		servers = append(servers, startNetnsServer(t, nss[i], ips[i], joins))
	}
	var leader *netnsServer
	waitFor(t, 60*time.Second, "a leader agreed by the three servers", func() bool {
		l := leaderOf(servers[0])
		if l == "" || leaderOf(servers[1]) != l || leaderOf(servers[2]) != l {
			return false
		}
		for _, s := range servers {
			if l == s.ip+":4647" {
				leader = s
			}
		}
		return leader != nil
	})
	if _, _, err := leader.client.Jobs().Register(countZeroJob("before"), nil); err != nil {
		t.Fatal(err)
	}
	var majority []*netnsServer
	for _, s := range servers {
		if s != leader {
			majority = append(majority, s)
		}
	}

	cutOff(t, leader, majority, true)
	// The majority elects one of its own.
	var newLeader *netnsServer
	waitFor(t, 30*time.Second, "the majority electing a leader", func() bool {
		l := leaderOf(majority[0])
		if l == "" || leaderOf(majority[1]) != l {
			return false
		}
		for _, s := range majority {
			if l == s.ip+":4647" {
				newLeader = s
			}
		}
		return newLeader != nil
	})
	if _, _, err := newLeader.client.Jobs().Register(countZeroJob("during"), nil); err != nil {
		t.Fatalf("the majority refused a write: %v", err)
	}
	// The cut-off server gives up leadership and refuses writes.
	waitFor(t, 30*time.Second, "the cut-off server no longer leading", func() bool {
		self, err := leader.client.Agent().Self()
		return err == nil && self.Stats["raft"]["state"] != "Leader"
	})
	start := time.Now()
	_, _, err := leader.client.Jobs().Register(countZeroJob("minority"), nil)
	if err == nil || !strings.Contains(err.Error(), "No cluster leader") {
		t.Fatalf("a write through the cut-off server answered %v, want a No cluster leader error", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the refused write took %v to answer", d)
	}

	cutOff(t, leader, majority, false)
	waitFor(t, 60*time.Second, "all three agreeing on the leader after healing", func() bool {
		l := leaderOf(servers[0])
		return l != "" && leaderOf(servers[1]) == l && leaderOf(servers[2]) == l
	})
	want := []string{"before", "during"}
	waitFor(t, 30*time.Second, "the same jobs and Raft last index on every server", func() bool {
		idx := raftLastIndex(servers[0])
		for _, s := range servers {
			if fmt.Sprint(nsJobIDs(s)) != fmt.Sprint(want) || raftLastIndex(s) != idx || idx == "" {
				return false
			}
		}
		return true
	})
}
