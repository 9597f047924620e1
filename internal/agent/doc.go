// Package agent owns the `drover agent` process: it turns the merged agent
// configuration into a running server and/or client, serves the HTTP API,
// sets up logging and metrics, and shuts everything down on a signal.
//
// It must never hold scheduling or state logic itself: it wires the server,
// client and HTTP packages together and routes RPCs between them.
package agent
