package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// DefaultInitName is the file `job init` writes.
const DefaultInitName = "example.nomad.hcl"

// JobInitCommand is `job init`.
type JobInitCommand struct{ Meta }

func (c *JobInitCommand) Synopsis() string { return "Create an example job file" }
func (c *JobInitCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job init [options] [<filename>]

  Writes a commented example job file (default `+DefaultInitName+`) that runs
  as is on a dev agent (`+BinaryName+` agent -dev). It never overwrites a file.

Init Options:

  -short   Write the job without comments.
`) + "\n" + globalHelp
}

func (c *JobInitCommand) Run(args []string) int {
	var short bool
	fset := c.FlagSet("job init")
	fset.BoolVar(&short, "short", false, "")
	if err := fset.Parse(args); err != nil || fset.NArg() > 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments or one: <filename>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	name := DefaultInitName
	if fset.NArg() == 1 {
		name = fset.Arg(0)
	}
	if _, err := os.Stat(name); err == nil {
		c.Ui.Error(fmt.Sprintf("Job file %q already exists: remove it or name another file", name))
		return 1
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.Ui.Error(fmt.Sprintf("Failed to stat %q: %v", name, err))
		return 1
	}
	body := exampleJob
	if short {
		body = stripComments(body)
	}
	if err := os.WriteFile(name, []byte(body), 0o660); err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to write %q: %v", name, err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf(`Example job file written to %s

It describes a service job "example": one task, run by the raw_exec driver,
that prints a line every few seconds. On a dev agent (%[2]s agent -dev):

    %[2]s job run %[1]s       # submit it and watch it being placed
    %[2]s job status example           # its allocations
    %[2]s alloc logs <alloc-id>        # what the task printed
    %[2]s job stop -purge example      # stop it and forget it`, name, BinaryName))
	return 0
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "#") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

const exampleJob = `# An example job. Every block and attribute is explained on
# https://developer.hashicorp.com/nomad/docs/job-specification (Drover reads
# the same jobspec). It runs as is on a dev agent: "drover agent -dev".

# A job is the unit you submit. "example" is its ID.
job "example" {
  # Where it may run: "*" means every datacenter. A dev agent is in "dc1".
  datacenters = ["*"]

  # "service" tasks run until stopped (restarted if they exit). Use "batch"
  # for work that runs to completion.
  type = "service"

  # A group is a set of tasks always placed together on one node. count is
  # how many copies (allocations) of the group run.
  group "app" {
    count = 1

    # What the client does when a task exits: restart it twice within 30
    # minutes, waiting 15s each time, then mark the allocation failed.
    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    # A task is one process, started by a driver. raw_exec runs a command
    # directly on the node (it is enabled on dev agents).
    task "hello" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        # NOMAD_* variables are set by the client for every task.
        args = ["-c", "while true; do echo \"hello from $NOMAD_ALLOC_NAME\"; sleep 5; done"]
      }

      # What the scheduler reserves on the node: CPU in MHz, memory in MB.
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`
