package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// `node meta read|apply`: a client's dynamic node metadata through
// /v1/client/metadata. Both talk to the agent addressed, which answers only
// for its own node: -node-id picks that node (and is checked by the agent).

// NodeMetaReadCommand is `node meta read`.
type NodeMetaReadCommand struct{ Meta }

func (c *NodeMetaReadCommand) Synopsis() string { return "Read node metadata" }
func (c *NodeMetaReadCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node meta read [-json] [-node-id ...]

  Reads a client node's metadata: the merged meta the node is scheduled
  with, the dynamic meta set by "node meta apply" and the static meta from
  the agent's configuration. Only a client agent answers, for its own node.

Node Meta Read Options:

  -node-id <id>
    The node to read (an ID or unique prefix). Default: the node of the
    agent the command talks to.

  -json      Output the metadata as JSON.
  -t <tmpl>  Format and display the metadata using a Go template.
`) + "\n" + globalHelp
}

func (c *NodeMetaReadCommand) Run(args []string) int {
	var nodeID string
	var out outputFormat
	fs := c.FlagSet("node meta read")
	fs.StringVar(&nodeID, "node-id", "", "")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
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
	id, err := lookupNodeID(client, nodeID)
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	meta, err := client.Nodes().Meta().Read(id, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading dynamic node metadata: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, meta)
	}
	dynamic := make(map[string]string, len(meta.Dynamic))
	for k, v := range meta.Dynamic {
		if v == nil {
			dynamic[k] = "<unset>"
		} else {
			dynamic[k] = *v
		}
	}
	c.Ui.Output(strings.Join([]string{
		"All Meta", formatMeta(meta.Meta),
		"\nDynamic Meta", formatMeta(dynamic),
		"\nStatic Meta", formatMeta(meta.Static),
	}, "\n"))
	return 0
}

// formatMeta lists a meta map as sorted "key = value" lines.
func formatMeta(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rows := make([]string, len(keys))
	for i, k := range keys {
		rows[i] = k + "|" + m[k]
	}
	return formatKV(rows)
}

// NodeMetaApplyCommand is `node meta apply`.
type NodeMetaApplyCommand struct{ Meta }

func (c *NodeMetaApplyCommand) Synopsis() string { return "Modify node metadata" }
func (c *NodeMetaApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node meta apply [-node-id ...] [-unset ...] key1=value1 ... kN=vN

  Sets and unsets dynamic metadata on a client node. The client keeps it
  across restarts, overlays it on the meta of its configuration (an unset
  key is removed even when the configuration sets it) and sends the node
  to the servers before the command returns, so jobs constrained on
  ${meta.<key>} are placed with the new values at once. Keys are dotted
  identifiers (letters, digits, '_' and '-').

Node Meta Apply Options:

  -node-id <id>
    The node to modify (an ID or unique prefix). Default: the node of the
    agent the command talks to.

  -unset <key1,key2,...>
    Unset the comma separated list of keys.
`) + "\n" + globalHelp
}

func (c *NodeMetaApplyCommand) Run(args []string) int {
	var nodeID, unset string
	fs := c.FlagSet("node meta apply")
	fs.StringVar(&nodeID, "node-id", "", "")
	fs.StringVar(&unset, "unset", "", "")
	if err := fs.Parse(args); err != nil {
		c.Ui.Error(err.Error())
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	meta, err := parseMetaApply(fs.Args(), unset)
	if err != nil {
		c.Ui.Error(err.Error())
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	id, err := lookupNodeID(client, nodeID)
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if _, err := client.Nodes().Meta().Apply(&api.NodeMetaApplyRequest{NodeID: id, Meta: meta}, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error applying dynamic node metadata: %s", err))
		return 1
	}
	return 0
}

// parseMetaApply turns key=value arguments and -unset's list into an
// apply request's Meta (nil values unset).
func parseMetaApply(args []string, unset string) (map[string]*string, error) {
	meta := map[string]*string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("Error parsing %q: metadata must be given as key=value", a)
		}
		meta[k] = &v
	}
	for k := range strings.SplitSeq(unset, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if v, ok := meta[k]; ok && v != nil {
			return nil, fmt.Errorf("Key %q is both set and unset", k)
		}
		meta[k] = nil
	}
	if len(meta) == 0 {
		return nil, fmt.Errorf("Must specify at least one key=value pair or -unset")
	}
	return meta, nil
}

// lookupNodeID resolves a node ID prefix to the full ID ("" stays "": the
// agent's own node). A full ID is taken as it is, so a client agent that
// cannot reach its servers still answers for its own node.
func lookupNodeID(client *api.Client, prefix string) (string, error) {
	if prefix == "" || len(prefix) == 36 {
		return prefix, nil
	}
	if len(prefix) == 1 {
		return "", fmt.Errorf("Node ID must contain at least two characters.")
	}
	nodes, _, err := client.Nodes().PrefixList(prefix)
	if err != nil {
		return "", fmt.Errorf("Error querying node: %w", err)
	}
	switch len(nodes) {
	case 0:
		return "", fmt.Errorf("No node(s) with prefix %q found", prefix)
	case 1:
		return nodes[0].ID, nil
	}
	return "", fmt.Errorf("Prefix matched multiple nodes\n\n%s", formatNodeList(nodes, true))
}
