// Package tlsutil owns the agent's TLS material and rules: loading the CA,
// certificate and key named by the `tls` block (and loading them again on
// reload, so new connections use the new certificate), the tls.Configs of
// the HTTPS API and of both ends of the RPC port, Nomad's certificate names
// (server.<region>.nomad, client.<region>.nomad) and the checks on them,
// and generating a CA and certificates for `drover tls`.
//
// It must never dial or listen: internal/rpc and the agent do.
package tlsutil
