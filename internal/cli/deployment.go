package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// resolveDeployment finds a deployment by ID or unique prefix. An unknown
// prefix and an ambiguous one (listing the candidates) are errors.
func resolveDeployment(client *api.Client, id string) (*api.Deployment, error) {
	if len(id) < 2 {
		return nil, fmt.Errorf("Identifier must contain at least two characters.")
	}
	ds, _, err := client.Deployments().PrefixList(id)
	if err != nil {
		return nil, fmt.Errorf("Error retrieving deployment: %w", err)
	}
	for _, d := range ds {
		if d.ID == id {
			return d, nil
		}
	}
	switch len(ds) {
	case 0:
		return nil, fmt.Errorf("No deployment(s) with prefix or ID %q found", id)
	case 1:
		return ds[0], nil
	}
	return nil, fmt.Errorf("Prefix matched multiple deployments\n\n%s", formatDeploymentList(ds, true))
}

// DeploymentListCommand is `deployment list`.
type DeploymentListCommand struct{ Meta }

func (c *DeploymentListCommand) Synopsis() string { return "List all deployments" }
func (c *DeploymentListCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` deployment list [options]

  Lists the deployments of the namespace, newest first.

List Options:

  -verbose   Show full IDs.
  -json      Output the deployments as JSON.
  -t <tmpl>  Format and display the deployments using a Go template.
`) + "\n" + globalHelp
}

func (c *DeploymentListCommand) Run(args []string) int {
	var verbose bool
	var out outputFormat
	fs := c.FlagSet("deployment list")
	fs.BoolVar(&verbose, "verbose", false, "")
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
	ds, _, err := client.Deployments().List(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving deployments: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, ds)
	}
	c.Ui.Output(formatDeploymentList(ds, verbose))
	return 0
}

// DeploymentStatusCommand is `deployment status`.
type DeploymentStatusCommand struct{ Meta }

func (c *DeploymentStatusCommand) Synopsis() string { return "Display the status of a deployment" }
func (c *DeploymentStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` deployment status [options] <deployment>

  Shows a deployment (by ID or unique ID prefix): its status and, per task
  group, the allocations desired, placed, healthy and unhealthy.

Status Options:

  -monitor    Follow the deployment until it ends, redrawn in place on a
              terminal, one line per change otherwise. Exit code 0 when it
              succeeds, 1 when it fails or is cancelled.
  -wait <d>   How long each poll of -monitor waits for a change (default 2s).
  -verbose    Full IDs; with -monitor, the deployment's allocations too.
  -json       Output the deployment as JSON.
  -t <tmpl>   Format and display the deployment using a Go template.
`) + "\n" + globalHelp
}

func (c *DeploymentStatusCommand) Run(args []string) int {
	var verbose, follow bool
	var wait time.Duration
	var out outputFormat
	fs := c.FlagSet("deployment status")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.BoolVar(&follow, "monitor", false, "")
	fs.DurationVar(&wait, "wait", 2*time.Second, "")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <deployment>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if err := out.check(); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if follow && out.enabled() {
		c.Ui.Error("The -monitor flag cannot be used with -json or -t")
		return 1
	}
	if wait <= 0 {
		c.Ui.Error(fmt.Sprintf("Invalid -wait %s: must be positive", wait))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	d, err := resolveDeployment(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, d)
	}
	if follow {
		c.Ui.Info(fmt.Sprintf("==> %s: Monitoring deployment %q", ts(), shortID(d.ID, verbose)))
		mon := c.deploymentMonitor(client, verbose)
		mon.wait = wait
		return mon.follow(d.ID)
	}
	text := formatDeployment(d, verbose)
	if verbose {
		allocs, _, err := client.Deployments().Allocations(d.ID, nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error retrieving the deployment's allocations: %s", err))
			return 1
		}
		text += "\n\nAllocations\n" + formatDeploymentAllocs(allocs, verbose)
	}
	c.Ui.Output(text)
	return 0
}

// deploymentWrite is what the write verbs share: [-detach] [-verbose]
// <deployment>, resolved, refused when it has already ended.
type deploymentWrite struct {
	Meta
	verb    string // "promote", "fail", ...
	detach  bool
	verbose bool
	groups  []string // -group (promote only)
}

// parse reads the flags and resolves the deployment; ok false means the
// command already printed why and returns 1.
func (w *deploymentWrite) parse(c helper, args []string, detachFlag bool) (*api.Client, *api.Deployment, bool) {
	fs := w.FlagSet("deployment " + w.verb)
	if detachFlag {
		fs.BoolVar(&w.detach, "detach", false, "")
	}
	fs.BoolVar(&w.verbose, "verbose", false, "")
	if w.verb == "promote" {
		fs.Func("group", "", func(s string) error { w.groups = append(w.groups, s); return nil })
	}
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		w.Ui.Error(flagErrorOr(err, "This command takes one argument: <deployment>"))
		w.Ui.Error(commandErrorText(c))
		return nil, nil, false
	}
	client, ok := w.apiClient()
	if !ok {
		return nil, nil, false
	}
	d, err := resolveDeployment(client, fs.Arg(0))
	if err != nil {
		w.Ui.Error(err.Error())
		return nil, nil, false
	}
	if w.verb != "unblock" && deploymentTerminal(d.Status) {
		w.Ui.Error(fmt.Sprintf("Deployment %q has already ended (status %q): it cannot be %s", shortID(d.ID, w.verbose), d.Status, pastTense(w.verb)))
		return nil, nil, false
	}
	return client, d, true
}

func pastTense(verb string) string {
	switch verb {
	case "promote", "pause", "resume":
		return verb + "d"
	case "fail":
		return "failed"
	}
	return verb + "ed"
}

// afterWrite prints the evaluation a write created, or monitors it.
func (w *deploymentWrite) afterWrite(client *api.Client, evalID string, withDeployment bool) int {
	if evalID == "" {
		return 0
	}
	if w.detach {
		w.Ui.Output("Evaluation ID: " + evalID)
		return 0
	}
	w.Ui.Output("")
	return w.evalMonitor(client, w.verbose, withDeployment).monitor(evalID)
}

const deploymentWriteHelp = `
  -detach    Print the evaluation ID and exit instead of monitoring it.
  -verbose   Show full IDs.`

// DeploymentPromoteCommand is `deployment promote`.
type DeploymentPromoteCommand struct{ Meta }

func (c *DeploymentPromoteCommand) Synopsis() string { return "Promote canaries in a deployment" }
func (c *DeploymentPromoteCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` deployment promote [options] <deployment>

  Promotes the canaries of a deployment: the rest of each group is then
  replaced by the new version. Without -group every group is promoted.
  Unless -detach, the evaluation and then the deployment are monitored.

Promote Options:

  -group <name>   Promote only this task group's canaries (repeatable).`+deploymentWriteHelp+`
`) + "\n" + globalHelp
}

func (c *DeploymentPromoteCommand) Run(args []string) int {
	w := &deploymentWrite{Meta: c.Meta, verb: "promote"}
	client, d, ok := w.parse(c, args, true)
	if !ok {
		return 1
	}
	return promote(w, client, d)
}

// promote promotes d's canaries (all groups, or w.groups) and follows.
func promote(w *deploymentWrite, client *api.Client, d *api.Deployment) int {
	for _, g := range w.groups {
		if _, ok := d.TaskGroups[g]; !ok {
			w.Ui.Error(fmt.Sprintf("Deployment %q has no task group %q (it deploys: %s)", shortID(d.ID, w.verbose), g, strings.Join(sortedKeys(d.TaskGroups), ", ")))
			return 1
		}
	}
	var u *api.DeploymentUpdateResponse
	var err error
	if len(w.groups) == 0 {
		u, _, err = client.Deployments().PromoteAll(d.ID, nil)
	} else {
		u, _, err = client.Deployments().PromoteGroups(d.ID, w.groups, nil)
	}
	if err != nil {
		w.Ui.Error(fmt.Sprintf("Error promoting deployment %q: %s", shortID(d.ID, w.verbose), err))
		return 1
	}
	return w.afterWrite(client, u.EvalID, true)
}

// DeploymentFailCommand is `deployment fail`.
type DeploymentFailCommand struct{ Meta }

func (c *DeploymentFailCommand) Synopsis() string { return "Manually fail a deployment" }
func (c *DeploymentFailCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` deployment fail [options] <deployment>

  Marks a running or paused deployment failed. A group with auto_revert
  rolls the job back to its latest stable version.

Fail Options:
`+deploymentWriteHelp+`
`) + "\n" + globalHelp
}

func (c *DeploymentFailCommand) Run(args []string) int {
	w := &deploymentWrite{Meta: c.Meta, verb: "fail"}
	client, d, ok := w.parse(c, args, true)
	if !ok {
		return 1
	}
	u, _, err := client.Deployments().Fail(d.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error failing deployment %q: %s", shortID(d.ID, w.verbose), err))
		return 1
	}
	if u.RevertedJobVersion != nil {
		c.Ui.Output(fmt.Sprintf("Deployment %q failed. Auto-reverted to job version %d.", shortID(d.ID, w.verbose), *u.RevertedJobVersion))
	} else {
		c.Ui.Output(fmt.Sprintf("Deployment %q failed", shortID(d.ID, w.verbose)))
	}
	return w.afterWrite(client, u.EvalID, false)
}

// DeploymentPauseCommand is `deployment pause`.
type DeploymentPauseCommand struct{ Meta }

func (c *DeploymentPauseCommand) Synopsis() string { return "Pause a deployment" }
func (c *DeploymentPauseCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` deployment pause [options] <deployment>

  Pauses a running deployment: no further allocations are replaced and its
  progress deadline does not expire until it is resumed.

Pause Options:

  -verbose   Show full IDs.
`) + "\n" + globalHelp
}

func (c *DeploymentPauseCommand) Run(args []string) int {
	w := &deploymentWrite{Meta: c.Meta, verb: "pause"}
	client, d, ok := w.parse(c, args, false)
	if !ok {
		return 1
	}
	if _, _, err := client.Deployments().Pause(d.ID, true, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error pausing deployment %q: %s", shortID(d.ID, w.verbose), err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Deployment %q paused", shortID(d.ID, w.verbose)))
	return 0
}

// DeploymentResumeCommand is `deployment resume`.
type DeploymentResumeCommand struct{ Meta }

func (c *DeploymentResumeCommand) Synopsis() string { return "Resume a paused deployment" }
func (c *DeploymentResumeCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` deployment resume [options] <deployment>

  Resumes a paused deployment. Unless -detach, the evaluation and then the
  deployment are monitored.

Resume Options:
`+deploymentWriteHelp+`
`) + "\n" + globalHelp
}

func (c *DeploymentResumeCommand) Run(args []string) int {
	w := &deploymentWrite{Meta: c.Meta, verb: "resume"}
	client, d, ok := w.parse(c, args, true)
	if !ok {
		return 1
	}
	u, _, err := client.Deployments().Pause(d.ID, false, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error resuming deployment %q: %s", shortID(d.ID, w.verbose), err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Deployment %q resumed", shortID(d.ID, w.verbose)))
	return w.afterWrite(client, u.EvalID, true)
}

// DeploymentUnblockCommand is `deployment unblock`.
type DeploymentUnblockCommand struct{ Meta }

func (c *DeploymentUnblockCommand) Synopsis() string { return "Manually unblock a deployment" }
func (c *DeploymentUnblockCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` deployment unblock [options] <deployment>

  Unblocks a blocked deployment of a multi-region job so that it succeeds.
  A single-region deployment is never blocked: the agent refuses it.

Unblock Options:
`+deploymentWriteHelp+`
`) + "\n" + globalHelp
}

func (c *DeploymentUnblockCommand) Run(args []string) int {
	w := &deploymentWrite{Meta: c.Meta, verb: "unblock"}
	client, d, ok := w.parse(c, args, true)
	if !ok {
		return 1
	}
	u, _, err := client.Deployments().Unblock(d.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error unblocking deployment %q: %s", shortID(d.ID, w.verbose), err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Deployment %q unblocked", shortID(d.ID, w.verbose)))
	return w.afterWrite(client, u.EvalID, false)
}
