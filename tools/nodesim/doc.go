// Command nodesim simulates N Drover client nodes in one process against a
// running server's RPC port (see package sim), prints the memory each
// simulated node costs once all are ready, and serves a control endpoint to
// fail or lose nodes.
//
//	go run ./tools/nodesim -servers 127.0.0.1:4647 -nodes 10000 [-control 127.0.0.1:4700]
//	curl -XPOST '127.0.0.1:4700/lose?percent=10'
package main
