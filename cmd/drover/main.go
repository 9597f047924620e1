// Command drover is the single Drover binary: the agent and every CLI verb.
package main

import (
	"os"

	mcli "github.com/hashicorp/cli"

	"github.com/drover-project/drover/internal/agent"
	"github.com/drover-project/drover/internal/cli"
	"github.com/drover-project/drover/internal/version"
)

func main() {
	cli.Version = version.Version
	cli.AgentCommandFactory = func() (mcli.Command, error) {
		return &agent.Command{Stdout: os.Stdout, Stderr: os.Stderr}, nil
	}
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
