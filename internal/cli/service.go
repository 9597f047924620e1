package cli

import (
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
	fs := c.FlagSet("service list")
	var out outputFormat
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error("This command takes no arguments")
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if err := out.check(); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	list, _, err := client.Services().List(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing service registrations: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, list)
	}
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
	if len(rows) == 1 {
		c.Ui.Output("No service registrations found")
		return 0
	}
	c.Ui.Output(formatList(rows))
	return 0
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
	fs := c.FlagSet("service info")
	var out outputFormat
	var verbose bool
	var filter string
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.StringVar(&filter, "filter", "", "")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error("This command takes one argument: <service_name>")
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if err := out.check(); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	regs, _, err := client.Services().Get(fs.Arg(0), &api.QueryOptions{Filter: filter})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing service registrations: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, regs)
	}
	if len(regs) == 0 {
		c.Ui.Output("No service registrations found")
		return 0
	}
	if verbose {
		for i, r := range regs {
			if i > 0 {
				c.Ui.Output("")
			}
			c.Ui.Output(formatKV([]string{
				"ID|" + r.ID, "Service Name|" + r.ServiceName, "Namespace|" + r.Namespace,
				"Job ID|" + r.JobID, "Alloc ID|" + r.AllocID, "Node ID|" + r.NodeID, "Datacenter|" + r.Datacenter,
				fmt.Sprintf("Address|%s:%d", r.Address, r.Port), "Tags|" + strings.Join(r.Tags, ","),
			}))
		}
		return 0
	}
	rows := []string{"Job ID|Address|Tags|Node ID|Alloc ID"}
	for _, r := range regs {
		rows = append(rows, fmt.Sprintf("%s|%s:%d|[%s]|%s|%s", r.JobID, r.Address, r.Port, strings.Join(r.Tags, ","),
			shortID(r.NodeID, false), shortID(r.AllocID, false)))
	}
	c.Ui.Output(formatList(rows))
	return 0
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
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 {
		c.Ui.Error("This command takes two arguments: <service_name> and <service_id>")
		c.Ui.Error(commandErrorText(c))
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
