package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/drover-project/drover/tools/nodesim/sim"
)

func main() {
	servers := flag.String("servers", "127.0.0.1:4647", "comma-separated server RPC addresses")
	nodes := flag.Int("nodes", 1000, "simulated nodes")
	conns := flag.Int("conns", 0, "TCP connections per server (0: one per 1,000 nodes)")
	dc := flag.String("dc", "dc1", "datacenter")
	cpu := flag.Int64("cpu", 8000, "CPU MHz per node")
	mem := flag.Int64("memory", 16384, "memory MB per node")
	runDelay := flag.Duration("run-delay", 100*time.Millisecond, "arrival -> running")
	batchDur := flag.Duration("batch-duration", time.Second, "batch allocs: running -> complete")
	control := flag.String("control", "", "serve the control endpoint on this address (GET /stats, POST /lose, POST /fail)")
	lose := flag.Int("lose", 0, "lose this many nodes once all are ready")
	fail := flag.Int("fail", 0, "fail this many nodes once all are ready")
	flag.Parse()

	before := sim.ReadMem()
	s, err := sim.New(sim.Config{Servers: strings.Split(*servers, ","), Nodes: *nodes, Conns: *conns,
		Datacenter: *dc, CPU: *cpu, MemoryMB: *mem, RunDelay: *runDelay, BatchDuration: *batchDur,
		Logf: log.Printf})
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	if err := s.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	after := sim.ReadMem()
	fmt.Printf("%d nodes ready in %s over %d connection(s) per server\n", *nodes, time.Since(start).Round(time.Millisecond), s.Config().Conns)
	fmt.Printf("memory per node: %.1f KB RSS, %.1f KB heap+stacks\n",
		perNode(after.RSS, before.RSS, *nodes), perNode(after.Total(), before.Total(), *nodes))
	if *lose > 0 {
		fmt.Printf("lost %d nodes\n", len(s.Lose(*lose)))
	}
	if *fail > 0 {
		fmt.Printf("failed %d nodes\n", len(s.Fail(*fail)))
	}
	if *control != "" {
		go func() { log.Fatal(http.ListenAndServe(*control, s.Handler())) }()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	tick := time.NewTicker(10 * time.Second)
	for {
		select {
		case <-sig:
			s.Stop()
			json.NewEncoder(os.Stdout).Encode(s.Stats())
			return
		case <-tick.C:
			st := s.Stats()
			fmt.Printf("allocs %d running %d complete %d failed %d pulls %d heartbeats %d rpc errors %d\n",
				st.AllocsSeen, st.ReportedRun, st.ReportedDone, st.ReportedFail, st.Pulls, st.Heartbeats, st.RPCErrors)
		}
	}
}

func perNode(after, before uint64, n int) float64 {
	if after < before {
		return 0
	}
	return float64(after-before) / float64(n) / 1024
}
