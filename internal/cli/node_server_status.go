package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

// NodeStatusCommand is `node status [node]`.
type NodeStatusCommand struct{ Meta }

func (c *NodeStatusCommand) Synopsis() string { return "Display status information about nodes" }
func (c *NodeStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node status [options] [node]

  Without a node, lists all client nodes. With a node ID (or unique prefix),
  shows the node, the resources its allocations hold, its host's use of
  them (asked of the node's agent, through the servers) and its
  allocations.

Node Status Options:

  -self      Show the node of the agent the command talks to.
  -stats     Add the host's per-core CPU, memory and disk figures.
  -verbose   Full IDs, and the node's attributes and meta.
  -filter <expr>
             List only the nodes matching this filter expression (the
             language of the API's ?filter=, evaluated on the server
             against each node, e.g. 'Meta.rack == "r1"'). Lists only.
  -json      Output the node list (or the node) as JSON.
  -t <tmpl>  Format and display the node list (or the node) using a Go template.
`) + "\n" + globalHelp
}

func (c *NodeStatusCommand) Run(args []string) int {
	var verbose, self, stats bool
	var filter string
	var out outputFormat
	fs := c.FlagSet("node status")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.StringVar(&filter, "filter", "", "")
	fs.BoolVar(&self, "self", false, "")
	fs.BoolVar(&stats, "stats", false, "")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() > 1 || (self && fs.NArg() > 0) {
		c.Ui.Error(flagErrorOr(err, "This command takes either no arguments or one: <node> (none with -self)"))
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
	prefix := fs.Arg(0)
	if self {
		info, err := client.Agent().Self()
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error querying the agent: %s", err))
			return 1
		}
		if prefix = info.Stats["client"]["node_id"]; prefix == "" {
			c.Ui.Error("The agent is not running a client: -self needs one")
			return 1
		}
	}
	if prefix == "" {
		nodes, _, err := client.Nodes().List(&api.QueryOptions{Filter: filter})
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error querying node status: %s", err))
			return 1
		}
		if out.enabled() {
			return out.emit(&c.Meta, nodes)
		}
		if len(nodes) == 0 {
			c.Ui.Output("No nodes registered")
			return 0
		}
		c.Ui.Output(formatNodeList(nodes, verbose))
		return 0
	}
	nodes, _, err := client.Nodes().PrefixList(prefix)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying node info: %s", err))
		return 1
	}
	if len(nodes) == 0 {
		c.Ui.Error(fmt.Sprintf("No node(s) with prefix %q found", prefix))
		return 1
	}
	if len(nodes) > 1 {
		c.Ui.Error(fmt.Sprintf("Prefix matched multiple nodes\n\n%s", formatNodeList(nodes, true)))
		return 1
	}
	node, _, err := client.Nodes().Info(nodes[0].ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying node info: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, node)
	}
	allocs, _, err := client.Nodes().Allocations(node.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying node allocations: %s", err))
		return 1
	}
	// Host figures come from the node's own agent, relayed through the
	// servers (-stats says why when the node cannot be reached).
	host, err := client.Nodes().Stats(node.ID, nil)
	if err != nil {
		host = nil
		if stats {
			c.Ui.Warn(fmt.Sprintf("Host stats unavailable: %s", err))
		}
	}
	c.Ui.Output(formatNode(node, allocs, verbose, host, stats))
	return 0
}

func formatNodeList(nodes []*api.NodeListStub, verbose bool) string {
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	rows := []string{"ID|Node Pool|DC|Name|Class|Drain|Eligibility|Status"}
	for _, n := range nodes {
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%s|%v|%s|%s",
			shortID(n.ID, verbose), n.NodePool, n.Datacenter, n.Name, orNone(n.NodeClass), n.Drain, n.SchedulingEligibility, n.Status))
	}
	return formatList(rows)
}

func formatNode(n *api.Node, allocs []*api.Allocation, verbose bool, host *api.HostStats, detailed bool) string {
	var drivers []string
	for _, name := range sortedKeys(n.Drivers) {
		if d := n.Drivers[name]; d != nil && d.Detected && d.Healthy {
			drivers = append(drivers, name)
		}
	}
	rows := []string{
		"ID|" + shortID(n.ID, verbose),
		"Name|" + n.Name,
		"Node Pool|" + n.NodePool,
		"Class|" + orNone(n.NodeClass),
		"DC|" + n.Datacenter,
		fmt.Sprintf("Drain|%v", n.Drain),
		"Eligibility|" + n.SchedulingEligibility,
		"Status|" + n.Status,
		"Drivers|" + strings.Join(drivers, ","),
	}
	if len(n.HostVolumes) > 0 || verbose {
		// As Nomad's: the names in the summary, a table with -verbose.
		rows = append(rows, "Host Volumes|"+orNone(strings.Join(sortedKeys(n.HostVolumes), ",")))
	}
	var b strings.Builder
	b.WriteString(formatKV(rows))
	b.WriteString(formatNodeResources(n, allocs, host, detailed))
	if verbose {
		// As Nomad's: every attribute (bridge support is
		// plugins.cni.version.bridge), then the node's meta.
		var attrs, meta []string
		for _, k := range sortedKeys(n.Attributes) {
			attrs = append(attrs, k+"|"+n.Attributes[k])
		}
		for _, k := range sortedKeys(n.Meta) {
			meta = append(meta, k+"|"+n.Meta[k])
		}
		if len(n.HostVolumes) > 0 {
			vrows := []string{"Name|ReadOnly|Source"}
			for _, name := range sortedKeys(n.HostVolumes) {
				if hv := n.HostVolumes[name]; hv != nil {
					vrows = append(vrows, fmt.Sprintf("%s|%v|%s", name, hv.ReadOnly, hv.Path))
				}
			}
			b.WriteString("\n\nHost Volumes\n" + formatList(vrows))
		}
		b.WriteString("\n\nAttributes\n" + formatKV(attrs))
		if len(meta) > 0 {
			b.WriteString("\n\nMeta\n" + formatKV(meta))
		}
	}
	b.WriteString("\n\nAllocations\n")
	if len(allocs) == 0 {
		b.WriteString("No allocations placed")
		return b.String()
	}
	sort.SliceStable(allocs, func(i, j int) bool { return allocs[i].CreateIndex > allocs[j].CreateIndex })
	arows := []string{"ID|Node ID|Task Group|Version|Desired|Status|Created|Modified"}
	for _, a := range allocs {
		var version uint64
		if a.Job != nil {
			version = deref(a.Job.Version)
		}
		arows = append(arows, fmt.Sprintf("%s|%s|%s|%d|%s|%s|%s|%s", shortID(a.ID, verbose), shortID(a.NodeID, verbose),
			a.TaskGroup, version, a.DesiredStatus, a.ClientStatus, timeColumn(a.CreateTime, verbose), timeColumn(a.ModifyTime, verbose)))
	}
	b.WriteString(formatList(arows))
	return b.String()
}

// ServerMembersCommand is `server members`.
type ServerMembersCommand struct{ Meta }

func (c *ServerMembersCommand) Synopsis() string {
	return "Display a list of known servers and their status"
}
func (c *ServerMembersCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` server members [options]

  Lists the servers in the gossip pool with their status and the leader.

Server Members Options:

  -detailed  Add each member's gossip tags.
  -json      Output the members as JSON.
`) + "\n" + globalHelp
}

func (c *ServerMembersCommand) Run(args []string) int {
	var verbose bool
	fs := c.FlagSet("server members")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.BoolVar(&verbose, "detailed", false, "")
	out := outputFormat{noTemplate: true}
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	members, err := client.Agent().Members()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying servers: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, members.Members)
	}
	leaders := map[string]string{}
	for _, m := range members.Members {
		r := m.Tags["region"]
		if _, ok := leaders[r]; !ok {
			leader, err := client.Status().RegionLeader(r)
			if err == nil {
				leaders[r] = leader
			}
		}
	}
	sort.SliceStable(members.Members, func(i, j int) bool { return members.Members[i].Name < members.Members[j].Name })
	rows := []string{"Name|Address|Port|Status|Leader|Raft Version|Build|Datacenter|Region"}
	if verbose {
		rows[0] += "|Tags"
	}
	for _, m := range members.Members {
		isLeader := leaders[m.Tags["region"]] == fmt.Sprintf("%s:%s", memberRPCHost(m), m.Tags["port"])
		row := fmt.Sprintf("%s|%s|%d|%s|%v|%s|%s|%s|%s", m.Name, m.Addr, m.Port, m.Status, isLeader,
			m.Tags["raft_vsn"], m.Tags["build"], m.Tags["dc"], m.Tags["region"])
		if verbose {
			keys := make([]string, 0, len(m.Tags))
			for k := range m.Tags {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var tags []string
			for _, k := range keys {
				tags = append(tags, k+"="+m.Tags[k])
			}
			row += "|" + strings.Join(tags, ",")
		}
		rows = append(rows, row)
	}
	c.Ui.Output(formatList(rows))
	return 0
}

// memberRPCHost is the host a server member serves RPC on.
func memberRPCHost(m *api.AgentMember) string {
	if h := m.Tags["rpc_addr"]; h != "" {
		return h
	}
	return m.Addr
}

// StatusCommand is `status [prefix]`: jobs without an argument; otherwise the
// one job, allocation, evaluation or node the prefix identifies.
type StatusCommand struct{ Meta }

func (c *StatusCommand) Synopsis() string { return "Display the status output for a resource" }
func (c *StatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` status [options] [identifier]

  Without an identifier, lists jobs. With one, searches jobs, allocations,
  evaluations and nodes by ID prefix and shows the status of the match.
`) + "\n" + globalHelp
}

func (c *StatusCommand) Run(args []string) int {
	var verbose bool
	fs := c.FlagSet("status")
	fs.BoolVar(&verbose, "verbose", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes either no arguments or one: <identifier>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	if fs.NArg() == 0 {
		return listJobs(c.Ui.Output, c.Ui.Error, client, "", c.allNamespaces())
	}
	prefix := fs.Arg(0)
	res, _, err := client.Search().PrefixSearch(prefix, contexts.All, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying search with id: %q: %s", prefix, err))
		return 1
	}
	var ctx contexts.Context
	var match string
	count := 0
	for _, k := range []contexts.Context{contexts.Jobs, contexts.Allocs, contexts.Evals, contexts.Nodes, contexts.Deployments} {
		ids := res.Matches[k]
		for _, id := range ids {
			if id == prefix {
				ids, count, ctx, match = []string{id}, 0, k, id
				break
			}
		}
		if len(ids) > 0 {
			count += len(ids)
			ctx, match = k, ids[0]
		}
		if match == prefix {
			count = 1
			break
		}
	}
	if count == 0 {
		c.Ui.Error(fmt.Sprintf("No matches found for %q", prefix))
		return 1
	}
	if count > 1 {
		var lines []string
		for _, k := range []contexts.Context{contexts.Jobs, contexts.Allocs, contexts.Evals, contexts.Nodes, contexts.Deployments} {
			for _, id := range res.Matches[k] {
				lines = append(lines, fmt.Sprintf("%s|%s", k, id))
			}
		}
		c.Ui.Error(fmt.Sprintf("Prefix %q matched multiple resources:\n\n%s", prefix, formatList(append([]string{"Type|ID"}, lines...))))
		return 1
	}
	var sub []string
	if verbose {
		sub = append(sub, "-verbose")
	}
	sub = append(sub, c.globalArgs()...)
	sub = append(sub, match)
	switch ctx {
	case contexts.Jobs:
		return (&JobStatusCommand{Meta: c.Meta}).Run(sub)
	case contexts.Allocs:
		return (&AllocStatusCommand{Meta: c.Meta}).Run(sub)
	case contexts.Deployments:
		return (&DeploymentStatusCommand{Meta: c.Meta}).Run(sub)
	case contexts.Nodes:
		return (&NodeStatusCommand{Meta: c.Meta}).Run(sub)
	case contexts.Evals:
		return (&EvalStatusCommand{Meta: c.Meta}).Run(sub)
	}
	return 1
}

// globalArgs re-creates the global flags for a delegated command.
func (m *Meta) globalArgs() []string {
	var out []string
	for k, v := range map[string]string{"address": m.address, "region": m.region, "namespace": m.namespace, "token": m.token} {
		if v != "" {
			out = append(out, "-"+k+"="+v)
		}
	}
	return out
}
