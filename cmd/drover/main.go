// Command drover is the single Drover binary: the agent and every CLI verb.
package main

import (
	"os"

	"github.com/drover-project/drover/internal/cli"
)

func main() {
	// The agent package sets cli.AgentCommandFactory here once it exists:
	//   cli.AgentCommandFactory = func() (mcli.Command, error) { return agent.NewCommand(...), nil }
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
