package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// The service commands read and delete Nomad-native service registrations
// (`service { provider = "nomad" }`).

// ServiceListCommand is `service list`.
type ServiceListCommand struct{ Meta }

func (c *ServiceListCommand) Synopsis() string { return "List services" }
func (c *ServiceListCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` service list [options]

  Lists the Nomad-native services registered in the namespace ("*" for
  all) with their tags.

List Options:

  -json          Output the services as JSON.
  -t <template>  Format the services with a Go template.
`) + "\n" + globalHelp
}

func (c *ServiceListCommand) Run(args []string) int {
	return runQuery(&c.Meta, c, args, query[[]*api.ServiceRegistrationListStub]{
		name: "service list", takes: "no arguments", errPrefix: "Error listing service registrations",
		fetch: func(client *api.Client, _ []string) ([]*api.ServiceRegistrationListStub, error) {
			list, _, err := client.Services().List(nil)
			return list, err
		},
		text: func(list []*api.ServiceRegistrationListStub) string {
			many := len(list) > 1
			rows := []string{"Service Name|Tags"}
			if many {
				rows[0] = "Service Name|Namespace|Tags"
			}
			for _, ns := range list {
				for _, s := range ns.Services {
					tags := "[" + strings.Join(s.Tags, ",") + "]"
					if many {
						rows = append(rows, s.ServiceName+"|"+ns.Namespace+"|"+tags)
					} else {
						rows = append(rows, s.ServiceName+"|"+tags)
					}
				}
			}
			return listOr(rows, "No service registrations found")
		},
	})
}

// ServiceInfoCommand is `service info`.
type ServiceInfoCommand struct{ Meta }

func (c *ServiceInfoCommand) Synopsis() string { return "Display an individual service" }
func (c *ServiceInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` service info [options] <service_name>

  Shows the registrations of one Nomad-native service: each allocation's
  address and tags.

Info Options:

  -filter <expr>  Only the registrations the expression matches.
  -json           Output the registrations as JSON.
  -t <template>   Format the registrations with a Go template.
  -verbose        Show full IDs and every field.
`) + "\n" + globalHelp
}

func (c *ServiceInfoCommand) Run(args []string) int {
	var verbose bool
	var filter string
	return runQuery(&c.Meta, c, args, query[[]*api.ServiceRegistration]{
		name: "service info", nargs: 1, takes: "one argument: <service_name>", errPrefix: "Error listing service registrations",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&verbose, "verbose", false, "")
			fs.StringVar(&filter, "filter", "", "")
		},
		fetch: func(client *api.Client, args []string) ([]*api.ServiceRegistration, error) {
			regs, _, err := client.Services().Get(args[0], &api.QueryOptions{Filter: filter})
			return regs, err
		},
		text: func(regs []*api.ServiceRegistration) string {
			if len(regs) == 0 {
				return "No service registrations found"
			}
			if verbose {
				blocks := make([]string, 0, len(regs))
				for _, r := range regs {
					blocks = append(blocks, formatKV([]string{
						"ID|" + r.ID, "Service Name|" + r.ServiceName, "Namespace|" + r.Namespace,
						"Job ID|" + r.JobID, "Alloc ID|" + r.AllocID, "Node ID|" + r.NodeID, "Datacenter|" + r.Datacenter,
						fmt.Sprintf("Address|%s:%d", r.Address, r.Port), "Tags|" + strings.Join(r.Tags, ","),
					}))
				}
				return strings.Join(blocks, "\n\n")
			}
			rows := []string{"Job ID|Address|Tags|Node ID|Alloc ID"}
			for _, r := range regs {
				rows = append(rows, fmt.Sprintf("%s|%s:%d|[%s]|%s|%s", r.JobID, r.Address, r.Port, strings.Join(r.Tags, ","),
					shortID(r.NodeID, false), shortID(r.AllocID, false)))
			}
			return formatList(rows)
		},
	})
}

// ServiceDeleteCommand is `service delete`.
type ServiceDeleteCommand struct{ Meta }

func (c *ServiceDeleteCommand) Synopsis() string { return "Deregister a registered service" }
func (c *ServiceDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` service delete [options] <service_name> <service_id>

  Deletes one registration of a Nomad-native service, such as one left
  behind by a client that is gone.
`) + "\n" + globalHelp
}

func (c *ServiceDeleteCommand) Run(args []string) int {
	fs := c.FlagSet("service delete")
	if !c.parseVerb(c, fs, args, 2, "two arguments: <service_name> and <service_id>") {
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	if _, err := client.Services().Delete(fs.Arg(0), fs.Arg(1), nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting service registration: %s", err))
		return 1
	}
	c.Ui.Output("Successfully deleted service registration")
	return 0
}
