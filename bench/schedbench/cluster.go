package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// startCluster runs n `drover agent -server` processes in their production
// configuration (Raft log on bolt with fsync, on-disk snapshots) on free
// loopback ports, joined by retry_join with bootstrap_expect = n, and waits
// until one leads with all n in its Raft configuration.
func startCluster(bin, dir string, n int, debug bool) ([]*server, error) {
	type ports struct{ http, rpc, serf int }
	var ps []ports
	var serfAddrs []string
	for i := 0; i < n; i++ {
		p := ports{freePort(), freePort(), freePort()}
		ps = append(ps, p)
		serfAddrs = append(serfAddrs, fmt.Sprintf("127.0.0.1:%d", p.serf))
	}
	var out []*server
	stopAll := func() {
		for _, s := range out {
			s.stop()
		}
	}
	for i, p := range ps {
		sdir := filepath.Join(dir, fmt.Sprintf("server%d", i+1))
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			stopAll()
			return nil, err
		}
		cfg, _ := json.Marshal(map[string]any{
			"name":         fmt.Sprintf("bench-s%d", i+1),
			"ports":        map[string]int{"http": p.http, "rpc": p.rpc, "serf": p.serf},
			"log_level":    "WARN",
			"enable_debug": debug,
			"server": map[string]any{"enabled": true, "bootstrap_expect": n,
				"server_join": map[string]any{"retry_join": serfAddrs, "retry_interval": "1s"}},
		})
		s, err := launchServer(bin, sdir, cfg, p.http, p.rpc)
		if err != nil {
			stopAll()
			return nil, err
		}
		out = append(out, s)
	}
	c, err := newAPIClient(out[0].httpAddr)
	if err != nil {
		stopAll()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		conf, err := c.Operator().RaftGetConfiguration(nil)
		if err == nil && len(conf.Servers) == n {
			leaders := 0
			for _, s := range conf.Servers {
				if s.Leader {
					leaders++
				}
			}
			if leaders == 1 {
				return out, nil
			}
		}
		select {
		case <-ctx.Done():
			stopAll()
			var logs []string
			for _, s := range out {
				b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
				logs = append(logs, fmt.Sprintf("%s:\n%s", s.dir, b))
			}
			return nil, fmt.Errorf("%d servers did not elect a leader with every server in Raft in 90s; logs:\n%s", n, strings.Join(logs, "\n"))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leaderOf returns the server whose RPC address the cluster names as
// leader (nil when none is known).
func leaderOf(servers []*server) *server {
	c, err := newAPIClient(servers[0].httpAddr)
	if err != nil {
		return nil
	}
	addr, err := c.Status().Leader()
	if err != nil {
		return nil
	}
	for _, s := range servers {
		if s.rpcAddr == addr {
			return s
		}
	}
	return nil
}

// clusterCPU sums the CPU seconds of every pid.
func clusterCPU(pids []int) float64 {
	var sum float64
	for _, p := range pids {
		if p > 0 {
			c, _ := procCPU(p)
			sum += c
		}
	}
	return sum
}
