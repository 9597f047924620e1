// Package httpapi owns Drover's HTTP API v1: it translates HTTP requests
// (Nomad's paths, methods, query parameters and JSON bodies) into calls on the
// server RPC endpoints, the local client's filesystem API or agent data, and
// translates the results back into the JSON shapes, headers and status codes
// that Nomad's official api client, CLI and Terraform provider expect.
//
// Every request that matches a route passes through one Authorizer before its
// handler runs; that is the single seam for authentication and ACLs.
//
// This package must never touch state directly, never schedule, and never
// decide anything a server decides (validation of job contents, blocking,
// forwarding): it only shapes requests and responses. Blocking queries are
// served by the server; this package only parses index/wait into the RPC's
// QueryOptions and copies the reply's QueryMeta into headers.
package httpapi
