package cli

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// NodePoolListCommand is `node pool list`.
type NodePoolListCommand struct{ Meta }

func (c *NodePoolListCommand) Synopsis() string { return "List node pools" }
func (c *NodePoolListCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node pool list [options]

  Lists the node pools, the built-in "all" and "default" included.

List Options:

  -filter <expr>  Only list the pools the expression matches.
  -json           Output the node pools as JSON.
  -t <template>   Format the node pools with a Go template.
`) + "\n" + globalHelp
}

func (c *NodePoolListCommand) Run(args []string) int {
	var filter string
	return runQuery(&c.Meta, c, args, query[[]*api.NodePool]{
		name: "node pool list", takes: "no arguments", errPrefix: "Error retrieving node pools",
		flags: func(fs *flag.FlagSet) { fs.StringVar(&filter, "filter", "", "") },
		fetch: func(client *api.Client, _ []string) ([]*api.NodePool, error) {
			pools, _, err := client.NodePools().List(&api.QueryOptions{Filter: filter})
			return pools, err
		},
		text: func(pools []*api.NodePool) string {
			rows := []string{"Name|Description"}
			for _, p := range pools {
				rows = append(rows, p.Name+"|"+p.Description)
			}
			return listOr(rows, "No node pools found")
		},
	})
}

// NodePoolInfoCommand is `node pool info`.
type NodePoolInfoCommand struct{ Meta }

func (c *NodePoolInfoCommand) Synopsis() string { return "Fetch information on a node pool" }
func (c *NodePoolInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node pool info [options] <node pool>

  Shows a node pool: its description, meta and scheduler configuration.

Info Options:

  -json          Output the node pool as JSON.
  -t <template>  Format the node pool with a Go template.
`) + "\n" + globalHelp
}

func (c *NodePoolInfoCommand) Run(args []string) int {
	return runQuery(&c.Meta, c, args, query[*api.NodePool]{
		name: "node pool info", nargs: 1, takes: "one argument: <node pool>", errPrefix: "Error reading node pool",
		fetch: func(client *api.Client, args []string) (*api.NodePool, error) {
			pool, _, err := client.NodePools().Info(args[0], nil)
			return pool, err
		},
		text: formatNodePool,
	})
}

func formatNodePool(p *api.NodePool) string {
	var b strings.Builder
	b.WriteString(formatKV([]string{"Name|" + p.Name, "Description|" + p.Description}))
	b.WriteString("\n\nMetadata\n")
	b.WriteString(formatMeta(p.Meta))
	b.WriteString("\n\nScheduler Configuration\n")
	sc := p.SchedulerConfiguration
	if sc == nil {
		b.WriteString("No scheduler configuration")
		return b.String()
	}
	algo := string(sc.SchedulerAlgorithm)
	if algo == "" {
		algo = "<cluster's>"
	}
	oversub := "<cluster's>"
	if sc.MemoryOversubscriptionEnabled != nil {
		oversub = fmt.Sprint(*sc.MemoryOversubscriptionEnabled)
	}
	b.WriteString(formatKV([]string{"Scheduler Algorithm|" + algo, "Memory Oversubscription Enabled|" + oversub}))
	return b.String()
}

// NodePoolApplyCommand is `node pool apply`.
type NodePoolApplyCommand struct{ Meta }

func (c *NodePoolApplyCommand) Synopsis() string { return "Create or update a node pool" }
func (c *NodePoolApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node pool apply [options] <input>

  Creates or updates a node pool from a specification file (HCL, or JSON
  with -json; "-" reads standard input):

    node_pool "gpu" {
      description = "Nodes with GPUs"
      meta {
        vendor = "nvidia"
      }
      scheduler_config {
        scheduler_algorithm             = "spread"
        memory_oversubscription_enabled = true
      }
    }

Apply Options:

  -json  The specification file is JSON (api.NodePool).
`) + "\n" + globalHelp
}

func (c *NodePoolApplyCommand) Run(args []string) int {
	fs := c.FlagSet("node pool apply")
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "")
	if !c.parseVerb(c, fs, args, 1, "one argument: <input>") {
		return 1
	}
	pool, ok := loadSpec(&c.Meta, fs.Arg(0), "node pool", asJSON, parseNodePoolSpec)
	if !ok {
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	if _, err := client.NodePools().Register(pool, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error applying node pool: %s", err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Successfully applied node pool %q!", pool.Name))
	return 0
}

// NodePoolDeleteCommand is `node pool delete`.
type NodePoolDeleteCommand struct{ Meta }

func (c *NodePoolDeleteCommand) Synopsis() string { return "Delete a node pool" }
func (c *NodePoolDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node pool delete [options] <node pool>

  Deletes a node pool. The built-in pools and pools that still have nodes
  or jobs cannot be deleted.
`) + "\n" + globalHelp
}

func (c *NodePoolDeleteCommand) Run(args []string) int {
	return runDelete(&c.Meta, c, args, "node pool delete", "one argument: <node pool>", "node pool",
		func(client *api.Client, name string) error {
			_, err := client.NodePools().Delete(name, nil)
			return err
		})
}

// NodePoolNodesCommand is `node pool nodes`.
type NodePoolNodesCommand struct{ Meta }

func (c *NodePoolNodesCommand) Synopsis() string { return "Fetch a list of nodes in a node pool" }
func (c *NodePoolNodesCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node pool nodes [options] <node pool>

  Lists the nodes of a node pool ("all": every node).

Nodes Options:

  -filter <expr>  Only list the nodes the expression matches.
  -verbose        Show full node IDs.
  -json           Output the nodes as JSON.
  -t <template>   Format the nodes with a Go template.
`) + "\n" + globalHelp
}

func (c *NodePoolNodesCommand) Run(args []string) int {
	var filter string
	var verbose bool
	return runQuery(&c.Meta, c, args, query[[]*api.NodeListStub]{
		name: "node pool nodes", nargs: 1, takes: "one argument: <node pool>", errPrefix: "Error querying node pool",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&filter, "filter", "", "")
			fs.BoolVar(&verbose, "verbose", false, "")
		},
		fetch: func(client *api.Client, args []string) ([]*api.NodeListStub, error) {
			nodes, _, err := client.NodePools().ListNodes(args[0], &api.QueryOptions{Filter: filter})
			return nodes, err
		},
		text: func(nodes []*api.NodeListStub) string {
			if len(nodes) == 0 {
				return "No nodes in node pool"
			}
			return formatNodeList(nodes, verbose)
		},
	})
}

// NodePoolJobsCommand is `node pool jobs`.
type NodePoolJobsCommand struct{ Meta }

func (c *NodePoolJobsCommand) Synopsis() string { return "Fetch a list of jobs in a node pool" }
func (c *NodePoolJobsCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node pool jobs [options] <node pool>

  Lists the jobs of a node pool in the namespace (-namespace '*': every
  namespace).

Jobs Options:

  -filter <expr>  Only list the jobs the expression matches.
  -json           Output the jobs as JSON.
  -t <template>   Format the jobs with a Go template.
`) + "\n" + globalHelp
}

func (c *NodePoolJobsCommand) Run(args []string) int {
	var filter string
	return runQuery(&c.Meta, c, args, query[[]*api.JobListStub]{
		name: "node pool jobs", nargs: 1, takes: "one argument: <node pool>", errPrefix: "Error querying node pool",
		flags: func(fs *flag.FlagSet) { fs.StringVar(&filter, "filter", "", "") },
		fetch: func(client *api.Client, args []string) ([]*api.JobListStub, error) {
			jobs, _, err := client.NodePools().ListJobs(args[0], &api.QueryOptions{Filter: filter})
			return jobs, err
		},
		text: func(jobs []*api.JobListStub) string {
			sort.Slice(jobs, func(i, j int) bool {
				if jobs[i].Namespace != jobs[j].Namespace {
					return jobs[i].Namespace < jobs[j].Namespace
				}
				return jobs[i].ID < jobs[j].ID
			})
			rows := []string{"ID|Namespace|Type|Priority|Status|Submit Date"}
			for _, j := range jobs {
				rows = append(rows, fmt.Sprintf("%s|%s|%s|%d|%s|%s", j.ID, j.Namespace, j.Type, j.Priority, jobStubStatus(j), formatUnixNano(j.SubmitTime)))
			}
			return listOr(rows, "No jobs in node pool")
		},
	})
}
