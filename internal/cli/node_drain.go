package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
	"golang.org/x/sys/unix"
)

// NodeDrainCommand is `node drain`.
type NodeDrainCommand struct{ Meta }

func (c *NodeDrainCommand) Synopsis() string { return "Toggle drain mode on a given node" }

func (c *NodeDrainCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node drain [options] <node>

  Toggles drain mode on a node. A draining node takes no new allocations;
  the leader moves its allocations to other nodes at the pace of each task
  group's migrate block, stops system job allocations last, and stops
  whatever is left when the deadline passes. When the drain completes the
  node stays ineligible for scheduling.

  Unless -detach is given the command follows the drain until it is done.

Node Drain Options:

  -enable            Enable draining on the node.
  -disable           Disable draining on the node.
  -deadline <dur>    How long allocations may take to move before they are
                     stopped (default 1h).
  -no-deadline       Never force the drain: allocations move at their own pace.
  -force             Stop every allocation now (a deadline in the past).
  -ignore-system     Leave system job allocations running on the node.
  -keep-ineligible   With -disable, keep the node ineligible for scheduling.
  -m <message>       A message recorded with the drain (meta "message").
  -meta <k=v>        Meta recorded with the drain; may be repeated.
  -detach            Return at once instead of following the drain.
  -monitor           Follow an existing drain without changing it.
  -self              Drain the node of the agent the command talks to.
  -yes               Do not ask for confirmation.
`) + "\n" + globalHelp
}

func (c *NodeDrainCommand) Run(args []string) int {
	var enable, disable, noDeadline, force, ignoreSystem, keepIneligible, detach, monitor, self, yes bool
	var deadline time.Duration
	var message string
	meta := metaFlags{}
	fs := c.FlagSet("node drain")
	fs.BoolVar(&enable, "enable", false, "")
	fs.BoolVar(&disable, "disable", false, "")
	fs.DurationVar(&deadline, "deadline", time.Hour, "")
	fs.BoolVar(&noDeadline, "no-deadline", false, "")
	fs.BoolVar(&force, "force", false, "")
	fs.BoolVar(&ignoreSystem, "ignore-system", false, "")
	fs.BoolVar(&keepIneligible, "keep-ineligible", false, "")
	fs.StringVar(&message, "m", "", "")
	fs.Var(meta, "meta", "")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&monitor, "monitor", false, "")
	fs.BoolVar(&self, "self", false, "")
	fs.BoolVar(&yes, "yes", false, "")
	if err := fs.Parse(args); err != nil {
		c.Ui.Error(err.Error())
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	switch {
	case fs.NArg() > 1 || (self && fs.NArg() > 0) || (!self && fs.NArg() != 1):
		c.Ui.Error("This command takes one argument: <node> (none with -self)")
		c.Ui.Error(commandErrorText(c))
		return 1
	case monitor && (enable || disable || detach):
		c.Ui.Error("The -monitor flag cannot be used with -enable, -disable or -detach")
		return 1
	case !monitor && enable == disable:
		c.Ui.Error("Exactly one of -enable or -disable must be given (or -monitor)")
		return 1
	case force && noDeadline:
		c.Ui.Error("-force and -no-deadline are mutually exclusive")
		return 1
	case enable && deadline < 0:
		c.Ui.Error("-deadline must be positive (use -force to stop everything now)")
		return 1
	case disable && (force || noDeadline || ignoreSystem):
		c.Ui.Error("-force, -no-deadline and -ignore-system only apply with -enable")
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	nodeID, err := resolveNodeArg(client, self, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if monitor {
		return c.follow(client, nodeID, 0, ignoreSystem)
	}
	if !yes && interactive() {
		verb := "enable"
		if disable {
			verb = "disable"
		}
		answer, err := c.Ui.Ask(fmt.Sprintf("Are you sure you want to %s drain mode for node %q? [y/N]", verb, nodeID))
		if err != nil || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "y") {
			c.Ui.Output("Canceling drain toggle")
			return 0
		}
	}
	if message != "" {
		meta["message"] = message
	}
	opts := &api.DrainOptions{MarkEligible: !keepIneligible}
	if len(meta) > 0 {
		opts.Meta = meta
	}
	if enable {
		spec := &api.DrainSpec{Deadline: deadline, IgnoreSystemJobs: ignoreSystem}
		if noDeadline {
			spec.Deadline = 0
		}
		if force {
			spec.Deadline = -1
		}
		opts.DrainSpec, opts.MarkEligible = spec, false
	}
	resp, err := client.Nodes().UpdateDrainOpts(nodeID, opts, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error updating drain specification: %s", err))
		return 1
	}
	if disable {
		c.Ui.Output(fmt.Sprintf("Node %q drain strategy unset", nodeID))
		return 0
	}
	c.Ui.Output(fmt.Sprintf("Node %q drain strategy set", nodeID))
	if detach {
		return 0
	}
	return c.follow(client, nodeID, resp.LastIndex, ignoreSystem)
}

// follow prints the drain's progress until it completes (or ^C, which
// leaves the drain running).
func (c *NodeDrainCommand) follow(client *api.Client, nodeID string, index uint64, ignoreSystem bool) int {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	c.Ui.Output(fmt.Sprintf("%s: Ctrl-C to stop monitoring: will not cancel the node drain", formatTime(time.Now())))
	for msg := range client.Nodes().MonitorDrain(ctx, nodeID, index, ignoreSystem) {
		line := fmt.Sprintf("%s: %s", formatTime(time.Now()), msg.Message)
		switch msg.Level {
		case api.MonitorMsgLevelError:
			c.Ui.Error(line)
		case api.MonitorMsgLevelWarn:
			c.Ui.Warn(line)
		default:
			c.Ui.Output(line)
		}
	}
	return 0
}

// NodeEligibilityCommand is `node eligibility`.
type NodeEligibilityCommand struct{ Meta }

func (c *NodeEligibilityCommand) Synopsis() string {
	return "Toggle scheduling eligibility for a given node"
}

func (c *NodeEligibilityCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` node eligibility [options] <node>

  Toggles whether a node may receive new allocations. An ineligible node
  keeps running what it has. A draining node cannot be made eligible.

Node Eligibility Options:

  -enable    Make the node eligible for scheduling.
  -disable   Make the node ineligible for scheduling.
  -self      Act on the node of the agent the command talks to.
`) + "\n" + globalHelp
}

func (c *NodeEligibilityCommand) Run(args []string) int {
	var enable, disable, self bool
	fs := c.FlagSet("node eligibility")
	fs.BoolVar(&enable, "enable", false, "")
	fs.BoolVar(&disable, "disable", false, "")
	fs.BoolVar(&self, "self", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 1 || (self && fs.NArg() > 0) || (!self && fs.NArg() != 1) {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <node> (none with -self)"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if enable == disable {
		c.Ui.Error("Exactly one of -enable or -disable must be given")
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	nodeID, err := resolveNodeArg(client, self, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if _, err := client.Nodes().ToggleEligibility(nodeID, enable, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error updating scheduling eligibility: %s", err))
		return 1
	}
	if enable {
		c.Ui.Output(fmt.Sprintf("Node %q scheduling eligibility set: eligible for scheduling", nodeID))
	} else {
		c.Ui.Output(fmt.Sprintf("Node %q scheduling eligibility set: ineligible for scheduling", nodeID))
	}
	return 0
}

// resolveNodeArg is the node a command acts on: a unique ID prefix, or
// with self the node of the agent the command talks to.
func resolveNodeArg(client *api.Client, self bool, prefix string) (string, error) {
	if self {
		info, err := client.Agent().Self()
		if err != nil {
			return "", fmt.Errorf("Error querying the agent: %s", err)
		}
		id := info.Stats["client"]["node_id"]
		if id == "" {
			return "", fmt.Errorf("The agent is not running a client: -self needs one")
		}
		return id, nil
	}
	if prefix == "" {
		return "", fmt.Errorf("Node ID must not be empty")
	}
	return lookupNodeID(client, prefix)
}

// interactive reports whether stdin is a terminal (a person who can
// answer); /dev/null, pipes and files are not.
func interactive() bool {
	_, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS)
	return err == nil
}
