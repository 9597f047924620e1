package cli

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// NamespaceListCommand is `namespace list`.
type NamespaceListCommand struct{ Meta }

func (c *NamespaceListCommand) Synopsis() string { return "List namespaces" }
func (c *NamespaceListCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` namespace list [options]

  Lists the namespaces (those the token may see when ACLs are enabled).

List Options:

  -json          Output the namespaces as JSON.
  -t <template>  Format the namespaces with a Go template.
`) + "\n" + globalHelp
}

func (c *NamespaceListCommand) Run(args []string) int {
	return runQuery(&c.Meta, c, args, query[[]*api.Namespace]{
		name: "namespace list", takes: "no arguments", errPrefix: "Error retrieving namespaces",
		fetch: func(client *api.Client, _ []string) ([]*api.Namespace, error) {
			list, _, err := client.Namespaces().List(nil)
			sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
			return list, err
		},
		text: func(list []*api.Namespace) string {
			rows := []string{"Name|Description"}
			for _, ns := range list {
				rows = append(rows, ns.Name+"|"+ns.Description)
			}
			return listOr(rows, "No namespaces found")
		},
	})
}

// NamespaceStatusCommand is `namespace status`.
type NamespaceStatusCommand struct{ Meta }

func (c *NamespaceStatusCommand) Synopsis() string { return "Display a namespace's status" }
func (c *NamespaceStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` namespace status [options] <namespace>

  Shows a namespace: its description, quota, capabilities (task drivers
  and network modes its jobs may use), node pool configuration and meta.

Status Options:

  -json          Output the namespace as JSON.
  -t <template>  Format the namespace with a Go template.
`) + "\n" + globalHelp
}

func (c *NamespaceStatusCommand) Run(args []string) int {
	return runQuery(&c.Meta, c, args, query[*api.Namespace]{
		name: "namespace status", nargs: 1, takes: "one argument: <namespace>", errPrefix: "Error looking up namespace",
		fetch: func(client *api.Client, args []string) (*api.Namespace, error) {
			ns, _, err := client.Namespaces().Info(args[0], nil)
			return ns, err
		},
		text: formatNamespace,
	})
}

func formatNamespace(ns *api.Namespace) string {
	quota := ns.Quota
	if quota == "" {
		quota = "<none>"
	}
	rows := []string{
		"Name|" + ns.Name,
		"Description|" + ns.Description,
		"Quota|" + quota,
	}
	if c := ns.Capabilities; c != nil {
		rows = append(rows,
			"EnabledDrivers|"+strings.Join(c.EnabledTaskDrivers, ","),
			"DisabledDrivers|"+strings.Join(c.DisabledTaskDrivers, ","),
			"EnabledNetworkModes|"+strings.Join(c.EnabledNetworkModes, ","),
			"DisabledNetworkModes|"+strings.Join(c.DisabledNetworkModes, ","))
	}
	if p := ns.NodePoolConfiguration; p != nil {
		rows = append(rows,
			"Node Pool Default|"+p.Default,
			"Node Pools Allowed|"+strings.Join(p.Allowed, ","),
			"Node Pools Denied|"+strings.Join(p.Denied, ","))
	}
	out := formatKV(rows)
	if len(ns.Meta) > 0 {
		out += "\n\nMetadata\n" + formatMeta(ns.Meta)
	}
	return out
}

// NamespaceApplyCommand is `namespace apply`.
type NamespaceApplyCommand struct{ Meta }

func (c *NamespaceApplyCommand) Synopsis() string { return "Create or update a namespace" }
func (c *NamespaceApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` namespace apply [options] <input>

  Creates or updates a namespace. <input> is a specification file (HCL, or
  JSON with -json; "-" reads standard input):

    name        = "team-a"
    description = "Team A's jobs"
    capabilities {
      enabled_task_drivers   = ["docker", "exec"]
      disabled_network_modes = ["host"]
    }
    node_pool_config {
      default = "team-a"
    }
    meta {
      owner = "team-a"
    }

  Instead of a file, <input> may be the name of the namespace to create or
  update with the flags below.

Apply Options:

  -description <text>  The namespace's description.
  -quota <name>        The quota to attach to the namespace.
  -json                The specification file is JSON (api.Namespace).
`) + "\n" + globalHelp
}

func (c *NamespaceApplyCommand) Run(args []string) int {
	fs := c.FlagSet("namespace apply")
	var description, quota optString
	var asJSON bool
	fs.Var(&description, "description", "")
	fs.Var(&quota, "quota", "")
	fs.BoolVar(&asJSON, "json", false, "")
	if !c.parseVerb(c, fs, args, 1, "one argument: <input>") {
		return 1
	}
	input := fs.Arg(0)
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	var ns *api.Namespace
	if input == "-" || fileExists(input) {
		if ns, ok = loadSpec(&c.Meta, input, "namespace", asJSON, parseNamespaceSpec); !ok {
			return 1
		}
	} else {
		cur, _, err := client.Namespaces().Info(input, nil)
		var ure api.UnexpectedResponseError
		switch {
		case err == nil:
			ns = cur
		case errors.As(err, &ure) && ure.StatusCode() == 404:
			ns = &api.Namespace{Name: input}
		default:
			c.Ui.Error(fmt.Sprintf("Error looking up namespace: %s", err))
			return 1
		}
	}
	if description.set {
		ns.Description = description.v
	}
	if quota.set {
		ns.Quota = quota.v
	}
	if _, err := client.Namespaces().Register(ns, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error applying namespace: %s", err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Successfully applied namespace %q!", ns.Name))
	return 0
}

// NamespaceDeleteCommand is `namespace delete`.
type NamespaceDeleteCommand struct{ Meta }

func (c *NamespaceDeleteCommand) Synopsis() string { return "Delete a namespace" }
func (c *NamespaceDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` namespace delete [options] <namespace>

  Deletes a namespace. "default" cannot be deleted, nor a namespace that
  still has jobs (purge them first).
`) + "\n" + globalHelp
}

func (c *NamespaceDeleteCommand) Run(args []string) int {
	return runDelete(&c.Meta, c, args, "namespace delete", "one argument: <namespace>", "namespace",
		func(client *api.Client, name string) error {
			_, err := client.Namespaces().Delete(name, nil)
			return err
		})
}

// optString is a string flag that remembers whether it was given.
type optString struct {
	set bool
	v   string
}

func (o *optString) String() string     { return o.v }
func (o *optString) Set(s string) error { o.set, o.v = true, s; return nil }

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}
