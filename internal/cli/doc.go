// Package cli implements Drover's command line: Nomad's verbs, flags, output
// formats and exit codes, on top of the official github.com/hashicorp/nomad/api
// client. Commands only talk HTTP to an agent; they never import server or
// client internals. The `agent` verb is linked in by main through
// AgentCommandFactory so this package stays free of the agent's dependencies.
package cli
