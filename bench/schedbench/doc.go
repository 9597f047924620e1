// Command schedbench measures the scheduler end to end: it starts a drover
// server as its own process in production configuration (Raft log on bolt
// with fsync, `agent -server -data-dir <tmp> -bind 127.0.0.1`, free ports) or
// uses one given by -addr/-rpc, registers N simulated nodes in-process with
// tools/nodesim/sim over the real RPC protocol, submits J service jobs of C
// raw_exec allocations (cpu 20, memory 32) through the HTTP API with the
// official Go client, waits until all run, and prints the figures.
//
//	go run ./bench/schedbench -nodes 1000 -jobs 10 -count 200 -json
//	go run ./bench/schedbench -scenario steady|large|tiny|nodeloss -json
//
// Figures: placements_per_sec is allocations placed ÷ (newest alloc
// CreateTime − first submit); eval_p50_ms/eval_p99_ms are CreateTime→ModifyTime
// of the complete evaluations; seconds is first submit → the server's
// acknowledgement of the last running update; server_cpu_s is the server
// process's user+system time (/proc/<pid>/stat) and nodesim_cpu_s this
// process's (rusage: the simulator plus the harness's few HTTP calls), both
// from first submit to all running; server_rss_mb is the server's VmRSS at the
// end. nodeloss (-lose-percent) then loses that share of nodes and reports
// recover_seconds: loss → every lost allocation replaced and running.
package main
