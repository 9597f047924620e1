package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// haCluster is three server processes (Raft on disk) joined by retry_join,
// and client agents that know every server.
type haCluster struct {
	t       *testing.T
	servers []*agent
	names   []string
	clients []*agent
}

// startAgentOn is startAgent with the ports chosen by the caller (servers
// must know each other's serf ports before they start).
func startAgentOn(t *testing.T, httpPort, rpcPort, serfPort int, dataDir string, args []string, cfg map[string]any) *agent {
	t.Helper()
	a := &agent{t: t, http: httpPort, rpc: rpcPort, serf: serfPort, dataDir: dataDir, args: args}
	base := map[string]any{
		"bind_addr":          "127.0.0.1",
		"ports":              map[string]int{"http": httpPort, "rpc": rpcPort, "serf": serfPort},
		"log_level":          "DEBUG",
		"leave_on_interrupt": true,
		"data_dir":           dataDir,
	}
	for k, v := range cfg {
		base[k] = v
	}
	b, _ := json.Marshal(base)
	a.cfgPath = filepath.Join(t.TempDir(), "agent-config")
	if err := os.WriteFile(a.cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	a.start()
	t.Cleanup(a.stop)
	return a
}

func startHACluster(t *testing.T, clients int) *haCluster {
	c := &haCluster{t: t}
	type ports struct{ http, rpc, serf int }
	var ps []ports
	var serfAddrs, rpcAddrs []string
	for i := 0; i < 3; i++ {
		p := ports{freePort(t), freePort(t), freePort(t)}
		ps = append(ps, p)
		serfAddrs = append(serfAddrs, fmt.Sprintf("127.0.0.1:%d", p.serf))
		rpcAddrs = append(rpcAddrs, fmt.Sprintf("127.0.0.1:%d", p.rpc))
	}
	for i, p := range ps {
		name := fmt.Sprintf("ha-s%d", i+1)
		c.names = append(c.names, name+".global")
		c.servers = append(c.servers, startAgentOn(t, p.http, p.rpc, p.serf, t.TempDir(), []string{"-server"}, map[string]any{
			"name": name,
			"server": map[string]any{"enabled": true, "bootstrap_expect": 3,
				"server_join": map[string]any{"retry_join": serfAddrs, "retry_interval": "1s"}},
		}))
	}
	c.waitLeader(nil, 60*time.Second)
	for i := 0; i < clients; i++ {
		// The first client names the servers with -servers, the others
		// with client { server_join { retry_join } }.
		args := []string{"-client", "-servers", strings.Join(rpcAddrs, ",")}
		extra := map[string]any{
			"name":   fmt.Sprintf("ha-c%d", i+1),
			"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		}
		if i > 0 {
			args = []string{"-client"}
			extra["client"] = map[string]any{"server_join": map[string]any{"retry_join": rpcAddrs}}
		}
		cl := startAgent(t, t.TempDir(), args, extra)
		c.clients = append(c.clients, cl)
	}
	if clients > 0 {
		waitFor(t, 30*time.Second, "client nodes ready", func() bool {
			nodes, _, err := c.servers[0].client.Nodes().List(nil)
			if err != nil || len(nodes) != clients {
				return false
			}
			for _, n := range nodes {
				if n.Status != "ready" {
					return false
				}
			}
			return true
		})
	}
	return c
}

// alive is every server process not killed (excluding skip).
func (c *haCluster) alive(skip *agent) []*agent {
	var out []*agent
	for _, s := range c.servers {
		if s == skip {
			continue
		}
		select {
		case <-s.exited:
		default:
			out = append(out, s)
		}
	}
	return out
}

// waitLeader waits until every live server (but skip) names the same
// leader, which is one of them, and returns it.
func (c *haCluster) waitLeader(skip *agent, d time.Duration) *agent {
	c.t.Helper()
	var leader *agent
	waitFor(c.t, d, "one leader agreed on by every live server", func() bool {
		leader = nil
		var addr string
		for _, s := range c.alive(skip) {
			l, err := s.client.Status().Leader()
			if err != nil || l == "" || (addr != "" && l != addr) {
				return false
			}
			addr = l
		}
		for _, s := range c.alive(skip) {
			if addr == fmt.Sprintf("127.0.0.1:%d", s.rpc) {
				leader = s
			}
		}
		return leader != nil
	})
	return leader
}

func (c *haCluster) raftPeers(a *agent) []string {
	conf, err := a.client.Operator().RaftGetConfiguration(nil)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range conf.Servers {
		out = append(out, s.Address)
	}
	return out
}

// raftVoters are the addresses of the voting servers of a's Raft
// configuration.
func (c *haCluster) raftVoters(a *agent) []string {
	conf, err := a.client.Operator().RaftGetConfiguration(nil)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range conf.Servers {
		if s.Voter {
			out = append(out, s.Address)
		}
	}
	return out
}

func (c *haCluster) memberStatus(a *agent) map[string]string {
	m, err := a.client.Agent().Members()
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, mem := range m.Members {
		out[mem.Name] = mem.Status
	}
	return out
}

func countZeroJob(id string) *api.Job {
	job := rawExecJob(id, "service", 0, "sleep 600")
	return job
}

func runningAllocs(a *agent, jobID string) map[string]string {
	allocs, _, err := a.client.Jobs().Allocations(jobID, false, nil)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, al := range allocs {
		if al.ClientStatus == "running" {
			out[al.ID] = al.NodeID
		}
	}
	return out
}

// Three servers joined by retry_join and two client agents: jobs registered
// through any server run; SIGKILL of the leader elects a new one within
// seconds, loses no acknowledged write, keeps accepting writes, runs a job
// registered after it, and marks no node down; the killed server restarts
// and serves the new data; a dead server force-left with -prune leaves the
// members and the Raft peers.
func TestHAClusterFailover(t *testing.T) {
	c := startHACluster(t, 2)
	for _, s := range c.servers {
		if peers := c.raftPeers(s); len(peers) != 3 {
			t.Fatalf("server %d sees Raft peers %v, want 3", s.http, peers)
		}
	}

	// A client agent answers members by asking a server.
	if m := c.memberStatus(c.clients[1]); len(m) != 3 || m["ha-s1.global"] != "alive" {
		t.Fatalf("members through a client agent: %v", m)
	}

	// Autopilot sees three healthy voters: one may fail.
	waitFor(t, 30*time.Second, "autopilot reporting three healthy voters", func() bool {
		h, _, err := c.servers[1].client.Operator().AutopilotServerHealth(nil)
		if err != nil || !h.Healthy || len(h.Voters) != 3 || h.FailureTolerance != 1 || len(h.Servers) != 3 {
			return false
		}
		for _, s := range h.Servers {
			if !s.Healthy || s.SerfStatus != "alive" {
				return false
			}
		}
		return true
	})

	// A job through each server runs.
	for i, s := range c.servers {
		id := fmt.Sprintf("before-%d", i)
		if _, _, err := s.client.Jobs().Register(rawExecJob(id, "service", 1, "sleep 600"), nil); err != nil {
			t.Fatalf("registering %s through server %d: %v", id, i, err)
		}
	}
	before := map[string]map[string]string{}
	waitFor(t, 60*time.Second, "the three jobs running", func() bool {
		for i := range c.servers {
			id := fmt.Sprintf("before-%d", i)
			r := runningAllocs(c.servers[0], id)
			if len(r) != 1 {
				return false
			}
			before[id] = r
		}
		return true
	})

	// Writes keep coming through every server while the leader dies.
	leader := c.waitLeader(nil, 30*time.Second)
	var (
		mu    sync.Mutex
		acked []string
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for w, s := range c.servers {
		if s == leader {
			continue
		}
		wg.Add(1)
		go func(w int, s *agent) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, _, err := s.client.Jobs().Register(countZeroJob(id), nil); err == nil {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
				time.Sleep(20 * time.Millisecond) // pacing the load, not synchronisation
			}
		}(w, s)
	}
	waitFor(t, 30*time.Second, "writes acknowledged before the kill", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 5
	})
	killedAt := time.Now()
	leader.kill()
	// The bound is "within seconds", far from the failure it guards
	// against (no election at all); Raft's own timeouts are 1-2 s, and a
	// loaded machine stretches them, so it is 30 s.
	newLeader := c.waitLeader(leader, 30*time.Second)
	took := time.Since(killedAt)
	t.Logf("new leader %d after %v", newLeader.http, took)
	// Writes are accepted again: the writers ack after the election.
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	waitFor(t, 30*time.Second, "writes acknowledged after the election", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) > n+5
	})
	close(stop)
	wg.Wait()

	// Every acknowledged job is there, on every survivor (consistent reads
	// are forwarded to the leader; stale reads show the follower's copy once
	// it caught up).
	jobs, _, err := newLeader.client.Jobs().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, j := range jobs {
		have[j.ID] = true
	}
	for _, id := range append([]string{"before-0", "before-1", "before-2"}, acked...) {
		if !have[id] {
			t.Fatalf("acknowledged job %s is missing after the failover (%d acked)", id, len(acked))
		}
	}
	t.Logf("%d writes acknowledged across the failover, none lost", len(acked))

	// A job registered after the failover runs.
	other := c.alive(leader)
	if _, _, err := other[len(other)-1].client.Jobs().Register(rawExecJob("after", "service", 1, "sleep 600"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the post-failover job running", func() bool {
		return len(runningAllocs(newLeader, "after")) == 1
	})

	// No node was marked down, and the allocations that ran before still
	// run where they were (none replaced).
	nodes, _, err := newLeader.client.Nodes().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Status != "ready" {
			t.Fatalf("node %s is %s after the failover", n.Name, n.Status)
		}
	}
	for id, want := range before {
		got := runningAllocs(newLeader, id)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("job %s allocations changed across the failover: %v, were %v", id, got, want)
		}
	}

	// Autopilot's dead-server cleanup takes the dead leader out of Raft
	// once gossip sees it failed (a majority always stays).
	deadAddr := fmt.Sprintf("127.0.0.1:%d", leader.rpc)
	waitFor(t, 60*time.Second, "autopilot removing the dead server from Raft", func() bool {
		peers := c.raftPeers(newLeader)
		for _, p := range peers {
			if p == deadAddr {
				return false
			}
		}
		return len(peers) == 2
	})

	// The killed server restarts, rejoins (the leader adds it back to
	// Raft) and serves the new data on a stale (local) read.
	leader.start()
	waitFor(t, 60*time.Second, "the restarted server serving the post-failover job locally", func() bool {
		j, _, err := leader.client.Jobs().Info("after", &api.QueryOptions{AllowStale: true})
		return err == nil && j != nil && *j.ID == "after"
	})
	// It comes back as a non-voter, and votes once autopilot has seen it
	// stable (server_stabilization_time): until then a second dead server
	// would cost the quorum.
	waitFor(t, 60*time.Second, "the restarted server back in Raft as a voter", func() bool {
		for _, p := range c.raftVoters(newLeader) {
			if p == deadAddr {
				return len(c.raftVoters(newLeader)) == 3
			}
		}
		return false
	})
	if l := c.waitLeader(nil, 30*time.Second); l == nil {
		t.Fatal("no leader after the restart")
	}

	// A follower dies; force-leave -prune removes it from the members and
	// from Raft.
	cur := c.waitLeader(nil, 30*time.Second)
	var victim *agent
	var victimName string
	for i, s := range c.servers {
		if s != cur {
			victim, victimName = s, c.names[i]
			break
		}
	}
	victim.kill()
	waitFor(t, 30*time.Second, "the killed follower seen failed (or already force-left by autopilot)", func() bool {
		st := c.memberStatus(cur)[victimName]
		return st == "failed" || st == "left"
	})
	if out, code := cur.cli(t.TempDir(), "server", "force-leave", "-prune", victimName); code != 0 {
		t.Fatalf("server force-leave -prune (%d): %s", code, out)
	}
	victimAddr := fmt.Sprintf("127.0.0.1:%d", victim.rpc)
	waitFor(t, 30*time.Second, "the pruned server gone from members and Raft peers", func() bool {
		if _, ok := c.memberStatus(cur)[victimName]; ok {
			return false
		}
		for _, p := range c.raftPeers(cur) {
			if p == victimAddr {
				return false
			}
		}
		return len(c.raftPeers(cur)) == 2
	})
	out, code := cur.cli(t.TempDir(), "server", "members")
	if code != 0 || strings.Contains(out, victimName) {
		t.Fatalf("server members after the prune (%d):\n%s", code, out)
	}
	// Two of two voters: writes still commit.
	if _, _, err := cur.client.Jobs().Register(countZeroJob("after-prune"), nil); err != nil {
		t.Fatalf("write after the prune: %v", err)
	}

	// The last follower stops with SIGINT (leave_on_interrupt): it leaves
	// gossip and Raft, so the leader alone still commits.
	var last *agent
	var lastName string
	for i, s := range c.servers {
		if s != cur && s != victim {
			last, lastName = s, c.names[i]
		}
	}
	last.interrupt(60 * time.Second) // a clean leave, not stop's kill after 10 s
	waitFor(t, 30*time.Second, "the leaver shown left and out of Raft", func() bool {
		return c.memberStatus(cur)[lastName] == "left" && len(c.raftPeers(cur)) == 1
	})
	if _, _, err := cur.client.Jobs().Register(countZeroJob("after-leave"), nil); err != nil {
		t.Fatalf("write after a graceful leave: %v", err)
	}
}

// Joining by hand: a server started alone (bootstrap_expect = 1 on the
// first only) and another started without joining; `server join` brings
// the second into the first's gossip pool and Raft.
func TestServerJoinCLI(t *testing.T) {
	s1 := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{"name": "join-a", "server": map[string]any{"bootstrap_expect": 1}})
	s1.waitReady(false)
	s2 := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{"name": "join-b", "server": map[string]any{"bootstrap_expect": 2}})
	waitFor(t, 20*time.Second, "the second server's API", func() bool {
		_, err := s2.client.Agent().Self()
		return err == nil
	})
	out, code := s2.cli(t.TempDir(), "server", "join", fmt.Sprintf("127.0.0.1:%d", s1.serf))
	if code != 0 || !strings.Contains(out, "Joined 1 servers successfully") {
		t.Fatalf("server join (%d): %s", code, out)
	}
	waitFor(t, 20*time.Second, "the joined server in Raft and following the leader", func() bool {
		conf, err := s1.client.Operator().RaftGetConfiguration(nil)
		if err != nil || len(conf.Servers) != 2 {
			return false
		}
		l, err := s2.client.Status().Leader()
		return err == nil && l == fmt.Sprintf("127.0.0.1:%d", s1.rpc)
	})
	conf, err := s1.client.Operator().RaftGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, srv := range conf.Servers {
		names = append(names, srv.Node)
	}
	if strings.Join(names, ",") != "join-a.global,join-b.global" && strings.Join(names, ",") != "join-b.global,join-a.global" {
		t.Fatalf("Raft peers are named %v, want their member names", names)
	}
	out, code = s1.cli(t.TempDir(), "server", "members", "-detailed")
	if code != 0 || !strings.Contains(out, "join-a.global") || !strings.Contains(out, "join-b.global") || !strings.Contains(out, "role=nomad") {
		t.Fatalf("server members -detailed (%d):\n%s", code, out)
	}
	// Joining nothing is a clear failure.
	resp, err := http.Post(s1.url("/v1/agent/join"), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("join without ?address= answered %d", resp.StatusCode)
	}
}

// Gossip encryption: a server with the cluster's key (made by `operator
// gossip keyring -generate`) joins; one with another key, or none, cannot.
func TestGossipEncryption(t *testing.T) {
	gen := func() string {
		out, err := exec.Command(droverBin, "operator", "gossip", "keyring", "-generate").Output()
		if err != nil {
			t.Fatalf("keyring -generate: %v", err)
		}
		key := strings.TrimSpace(string(out))
		if b, err := base64.StdEncoding.DecodeString(key); err != nil || len(b) != 32 {
			t.Fatalf("keyring -generate printed %q, not a base64 32-byte key", key)
		}
		return key
	}
	key, other := gen(), gen()
	s1 := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{"name": "enc-a", "server": map[string]any{"bootstrap_expect": 1, "encrypt": key}})
	s1.waitReady(false)
	join := func(a *agent) (int, error) {
		waitFor(t, 20*time.Second, "the agent's API", func() bool {
			_, err := a.client.Agent().Self()
			return err == nil
		})
		return a.client.Agent().Join(fmt.Sprintf("127.0.0.1:%d", s1.serf))
	}
	s2 := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{"name": "enc-b", "server": map[string]any{"bootstrap_expect": 2, "encrypt": key}})
	if n, err := join(s2); err != nil || n != 1 {
		t.Fatalf("a server with the same key did not join: %d, %v", n, err)
	}
	s3 := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{"name": "enc-c", "server": map[string]any{"bootstrap_expect": 2, "encrypt": other}})
	if n, err := join(s3); err == nil || n != 0 {
		t.Fatalf("a server with another key joined: %d, %v", n, err)
	}
	s4 := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{"name": "enc-d", "server": map[string]any{"bootstrap_expect": 2}})
	if n, err := join(s4); err == nil || n != 0 {
		t.Fatalf("a server without a key joined: %d, %v", n, err)
	}
	m, err := s1.client.Agent().Members()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Members) != 2 {
		t.Fatalf("members of the encrypted pool: %d, want 2 (enc-a, enc-b)", len(m.Members))
	}

	// Rotate to the other key on the running servers: install, use,
	// remove the old one. The server holding only the new key then joins.
	dir := t.TempDir()
	for _, args := range [][]string{{"-install", other}, {"-use", other}, {"-remove", key}} {
		if out, code := s1.cli(dir, append([]string{"operator", "gossip", "keyring"}, args...)...); code != 0 {
			t.Fatalf("keyring %v (%d): %s", args, code, out)
		}
	}
	out, code := s2.cli(dir, "operator", "gossip", "keyring", "-list")
	if code != 0 || !strings.Contains(out, other) || strings.Contains(out, key) || !strings.Contains(out, "2/2") {
		t.Fatalf("keyring -list after the rotation (%d):\n%s", code, out)
	}
	if n, err := join(s3); err != nil || n != 1 {
		t.Fatalf("the server with the new key did not join after the rotation: %d, %v", n, err)
	}
	// The rotated keyring survives a restart (server.encrypt still names
	// the old key: the keyring in the data dir wins, as in Nomad).
	s1.stop()
	s1.start()
	waitFor(t, 20*time.Second, "the restarted server's API", func() bool {
		_, err := s1.client.Agent().Self()
		return err == nil
	})
	if out, code := s1.cli(dir, "operator", "gossip", "keyring", "-list"); code != 0 || !strings.Contains(out, other) || strings.Contains(out, key) {
		t.Fatalf("keyring after a restart (%d):\n%s", code, out)
	}
	// Without encryption there is no keyring to change: a clear 400.
	if out, code := s4.cli(dir, "operator", "gossip", "keyring", "-list"); code == 0 || !strings.Contains(out, "not enabled") {
		t.Fatalf("keyring -list on an unencrypted server (%d): %s", code, out)
	}
}

// operator autopilot get-config / set-config / health on a dev agent: the
// agent's autopilot block is what the first leader stores; set-config
// changes it through Raft; a bad value is refused naming the flag.
func TestOperatorAutopilotCLI(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"autopilot": map[string]any{"server_stabilization_time": "7s"}})
	a.waitReady(false)
	dir := t.TempDir()
	out, code := a.cli(dir, "operator", "autopilot", "get-config")
	if code != 0 || !strings.Contains(out, "ServerStabilizationTime = 7s") || !strings.Contains(out, "CleanupDeadServers      = true") {
		t.Fatalf("get-config (%d):\n%s", code, out)
	}
	if out, code = a.cli(dir, "operator", "autopilot", "set-config", "-min-quorum", "3", "-cleanup-dead-servers=false"); code != 0 {
		t.Fatalf("set-config (%d):\n%s", code, out)
	}
	cfg, _, err := a.client.Operator().AutopilotGetConfiguration(nil)
	if err != nil || cfg.MinQuorum != 3 || cfg.CleanupDeadServers || cfg.ServerStabilizationTime != 7*time.Second {
		t.Fatalf("after set-config: %+v %v", cfg, err)
	}
	if out, code = a.cli(dir, "operator", "autopilot", "set-config", "-last-contact-threshold", "soon"); code == 0 || !strings.Contains(out, "-last-contact-threshold") {
		t.Fatalf("a bad duration was accepted (%d):\n%s", code, out)
	}
	waitFor(t, 20*time.Second, "autopilot health of the dev server", func() bool {
		out, code = a.cli(dir, "operator", "autopilot", "health")
		return code == 0 && strings.Contains(out, "Healthy          = true")
	})
}

// retry_join that never reaches a server gives up after retry_max attempts
// and the agent exits with an error, as Nomad's does.
func TestRetryJoinMaxExits(t *testing.T) {
	closed := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	a := startAgent(t, t.TempDir(), []string{"-server", "-retry-join", closed, "-retry-max", "2", "-retry-interval", "100ms"},
		map[string]any{"server": map[string]any{"bootstrap_expect": 3}})
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent still runs after retry_max failed joins")
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(a.out.String(), "retry_max") {
		t.Fatalf("exit code %d, output:\n%s", code, tail(a.out.String(), 20))
	}
}
