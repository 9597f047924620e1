package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"
)

func main() {
	var o options
	flag.IntVar(&o.Nodes, "nodes", 0, "simulated nodes (default from -scenario)")
	flag.IntVar(&o.Jobs, "jobs", 0, "service jobs to submit (default from -scenario)")
	flag.IntVar(&o.Count, "count", 0, "allocations per job (default from -scenario)")
	scenario := flag.String("scenario", "", "steady | large | tiny | nodeloss | rolling | heartbeat (explicit -nodes/-jobs/-count override it)")
	flag.IntVar(&o.Submitters, "submitters", 0, "concurrent HTTP job registrations (default from -scenario: 64 for tiny, else 16)")
	flag.StringVar(&o.Addr, "addr", "", "HTTP address of an existing server (default: start one)")
	flag.IntVar(&o.Servers, "servers", 1, "server processes to start: 1, or 3 (a Raft cluster on disk joined by retry_join; nodes spread across the servers, jobs submitted through the leader)")
	flag.StringVar(&o.RPCAddr, "rpc", "", "with -addr: the server's RPC address")
	flag.IntVar(&o.ServerPID, "server-pid", 0, "with -addr: the server's pid, for its CPU and RSS")
	flag.StringVar(&o.Bin, "bin", "", "drover binary (default: go build ./cmd/drover)")
	flag.DurationVar(&o.Timeout, "timeout", 20*time.Minute, "give up after this long")
	flag.DurationVar(&o.RunDelay, "run-delay", 100*time.Millisecond, "simulated driver: arrival -> running")
	flag.Float64Var(&o.LosePercent, "lose-percent", 0, "after all run, lose this percentage of nodes and time recovery")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "save the server's CPU profile (from the first submit, -profile-time long) to this file; starts the server with enable_debug")
	flag.DurationVar(&o.ProfileSeconds, "profile-time", 20*time.Second, "length of the -cpuprofile")
	flag.StringVar(&o.HeapProfile, "heapprofile", "", "save the server's heap profile, taken once every allocation is placed, to this file; starts the server with enable_debug")
	flag.StringVar(&o.SelfProfile, "selfprofile", "", "save this process's CPU profile (the node simulator's work) from the first submit to the end of the run to this file")
	flag.IntVar(&o.EventSubscribers, "event-subscribers", 0, "read /v1/event/stream (every topic and namespace) with this many readers during the run")
	flag.IntVar(&o.MaxParallel, "max-parallel", 0, "give the jobs an update block with this max_parallel (rolling: 50; -1: max_parallel 0, no deployments); the rolling scenario then rolls out a new version and times its deployment")
	flag.DurationVar(&o.HealthyAfter, "healthy-after", 0, "simulated client: running -> healthy in a deployment (min_healthy_time)")
	flag.DurationVar(&o.Idle, "idle", 0, "before submitting, measure the idle fleet's server CPU this long (heartbeats, pulls); with -jobs 0 only this")
	flag.DurationVar(&o.Stall, "stall", 0, "with -idle: then SIGSTOP the server this long (a GC pause, a stuck disk) and count nodes it marks down")
	asJSON := flag.Bool("json", false, "print one JSON object")
	verbose := flag.Bool("v", false, "log progress to stderr")
	flag.Parse()
	if err := applyScenario(&o, *scenario); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if o.Servers != 1 && o.Servers != 3 {
		fmt.Fprintln(os.Stderr, "-servers must be 1 or 3")
		os.Exit(2)
	}
	if o.Addr != "" && o.Servers != 1 {
		fmt.Fprintln(os.Stderr, "-servers starts its own cluster: it does not go with -addr")
		os.Exit(2)
	}
	if o.Addr != "" && o.RPCAddr == "" {
		fmt.Fprintln(os.Stderr, "-addr needs -rpc (the server's RPC address)")
		os.Exit(2)
	}
	if *verbose {
		o.Logf = log.Printf
	}
	res, err := run(context.Background(), o)
	if err != nil {
		res.Error = err.Error()
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(res)
	} else {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Println(string(b))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedbench:", err)
		os.Exit(1)
	}
}

// applyScenario fills what the flags left zero from the scenarios.
func applyScenario(o *options, name string) error {
	var n, j, c int
	var lose float64
	submitters := 16
	switch name {
	case "":
		n, j, c = 1000, 10, 200
	case "steady":
		n, j, c = 5000, 50, 1000
	case "large":
		n, j, c = 10000, 100, 1000
	case "tiny":
		// Many users or pipelines each submitting one small job: 16
		// synchronous submitters cap the rate at 16 / (one Raft commit's
		// latency), a figure of the harness rather than of the server.
		n, j, c, submitters = 5000, 10000, 1, 64
	case "nodeloss":
		n, j, c, lose = 5000, 50, 100, 10
	case "heartbeat":
		n, j, c = 10000, 0, 0
		if o.Idle == 0 {
			o.Idle = time.Minute
		}
		if o.Stall == 0 {
			o.Stall = 5 * time.Second
		}
	case "rolling":
		n, j, c = 1000, 1, 1000
		if o.MaxParallel == 0 {
			o.MaxParallel = 50
		}
	default:
		return fmt.Errorf("unknown -scenario %q (steady, large, tiny, nodeloss, rolling, heartbeat)", name)
	}
	o.Scenario = name
	if o.Nodes == 0 {
		o.Nodes = n
	}
	if o.Jobs == 0 {
		o.Jobs = j
	}
	if o.Count == 0 {
		o.Count = c
	}
	if o.Submitters == 0 {
		o.Submitters = submitters
	}
	if o.LosePercent == 0 {
		o.LosePercent = lose
	}
	return nil
}
