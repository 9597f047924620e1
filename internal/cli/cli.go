package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	mcli "github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
	"github.com/posener/complete"
)

// Version is the product version printed by `drover version`.
var Version = "0.1.0"

// BinaryName is how help texts refer to the binary; main may set it from
// os.Args[0] so a `nomad` wrapper reads naturally.
var BinaryName = "drover"

// AgentCommandFactory builds the `agent` command. The main package sets it;
// it is a variable so that this package does not depend on the agent.
var AgentCommandFactory mcli.CommandFactory

// Run runs the command line args (without the program name) and returns the
// process exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	for i, a := range args {
		if a == "-v" || a == "-version" || a == "--version" {
			if i == 0 {
				args = []string{"version"}
			}
			break
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
	}
	ui := &mcli.BasicUi{Reader: os.Stdin, Writer: stdout, ErrorWriter: stderr}
	c := &mcli.CLI{
		Name:         BinaryName,
		Args:         args,
		Commands:     Commands(ui, stdout),
		HelpFunc:     helpFunc,
		HelpWriter:   stdout,
		ErrorWriter:  stderr,
		Autocomplete: true,
	}
	code, err := c.Run()
	if err != nil {
		fmt.Fprintf(stderr, "Error executing CLI: %v\n", err)
		return 1
	}
	return code
}

// Commands returns every command factory keyed by its verb path.
func Commands(ui mcli.Ui, stdout io.Writer) map[string]mcli.CommandFactory {
	m := Meta{Ui: ui, out: stdout}
	f := func(c mcli.Command) mcli.CommandFactory { return func() (mcli.Command, error) { return c, nil } }
	cmds := map[string]mcli.CommandFactory{
		"version":                           f(&VersionCommand{Meta: m}),
		"job":                               f(&GroupCommand{Meta: m, Name: "job", Synopsis_: "Interact with jobs"}),
		"job run":                           f(&JobRunCommand{Meta: m}),
		"job status":                        f(&JobStatusCommand{Meta: m}),
		"job stop":                          f(&JobStopCommand{Meta: m}),
		"job plan":                          f(&JobPlanCommand{Meta: m}),
		"job validate":                      f(&JobValidateCommand{Meta: m}),
		"job inspect":                       f(&JobInspectCommand{Meta: m}),
		"job history":                       f(&JobHistoryCommand{Meta: m}),
		"job revert":                        f(&JobRevertCommand{Meta: m}),
		"job scale":                         f(&JobScaleCommand{Meta: m}),
		"job restart":                       f(&JobRestartCommand{Meta: m}),
		"job scaling-events":                f(&JobScalingEventsCommand{Meta: m}),
		"scaling":                           f(&GroupCommand{Meta: m, Name: "scaling", Synopsis_: "Interact with scaling policies and events"}),
		"scaling policy":                    f(&GroupCommand{Meta: m, Name: "scaling policy", Synopsis_: "Interact with scaling policies"}),
		"scaling policy list":               f(&ScalingPolicyListCommand{Meta: m}),
		"scaling policy info":               f(&ScalingPolicyInfoCommand{Meta: m}),
		"job init":                          f(&JobInitCommand{Meta: m}),
		"init":                              f(&JobInitCommand{Meta: m}),
		"eval":                              f(&GroupCommand{Meta: m, Name: "eval", Synopsis_: "Interact with evaluations"}),
		"eval list":                         f(&EvalListCommand{Meta: m}),
		"eval status":                       f(&EvalStatusCommand{Meta: m}),
		"eval delete":                       f(&EvalDeleteCommand{Meta: m}),
		"alloc fs":                          f(&AllocFSCommand{Meta: m}),
		"alloc stop":                        f(&AllocStopCommand{Meta: m}),
		"agent-info":                        f(&AgentInfoCommand{Meta: m}),
		"alloc":                             f(&GroupCommand{Meta: m, Name: "alloc", Synopsis_: "Interact with allocations"}),
		"alloc status":                      f(&AllocStatusCommand{Meta: m}),
		"alloc logs":                        f(&AllocLogsCommand{Meta: m}),
		"alloc exec":                        f(&AllocExecCommand{Meta: m}),
		"alloc restart":                     f(&AllocRestartCommand{Meta: m}),
		"alloc signal":                      f(&AllocSignalCommand{Meta: m}),
		"alloc checks":                      f(&AllocChecksCommand{Meta: m}),
		"node":                              f(&GroupCommand{Meta: m, Name: "node", Synopsis_: "Interact with nodes"}),
		"node status":                       f(&NodeStatusCommand{Meta: m}),
		"node drain":                        f(&NodeDrainCommand{Meta: m}),
		"node eligibility":                  f(&NodeEligibilityCommand{Meta: m}),
		"node meta":                         f(&GroupCommand{Meta: m, Name: "node meta", Synopsis_: "Interact with node metadata"}),
		"node meta read":                    f(&NodeMetaReadCommand{Meta: m}),
		"node meta apply":                   f(&NodeMetaApplyCommand{Meta: m}),
		"server":                            f(&GroupCommand{Meta: m, Name: "server", Synopsis_: "Interact with servers"}),
		"server members":                    f(&ServerMembersCommand{Meta: m}),
		"server join":                       f(&ServerJoinCommand{Meta: m}),
		"server force-leave":                f(&ServerForceLeaveCommand{Meta: m}),
		"operator":                          f(&GroupCommand{Meta: m, Name: "operator", Synopsis_: "Provides cluster-level tools for operators"}),
		"operator raft":                     f(&GroupCommand{Meta: m, Name: "operator raft", Synopsis_: "Provides access to the Raft subsystem"}),
		"operator raft list-peers":          f(&OperatorRaftListPeersCommand{Meta: m}),
		"operator raft remove-peer":         f(&OperatorRaftRemovePeerCommand{Meta: m}),
		"operator raft transfer-leadership": f(&OperatorRaftTransferLeadershipCommand{Meta: m}),
		"operator snapshot":                 f(&GroupCommand{Meta: m, Name: "operator snapshot", Synopsis_: "Saves and restores snapshots of the cluster's state"}),
		"operator snapshot save":            f(&OperatorSnapshotSaveCommand{Meta: m}),
		"operator snapshot restore":         f(&OperatorSnapshotRestoreCommand{Meta: m}),
		"operator snapshot inspect":         f(&OperatorSnapshotInspectCommand{Meta: m}),
		"operator api":                      f(&OperatorAPICommand{Meta: m}),
		"status":                            f(&StatusCommand{Meta: m}),
		"monitor":                           f(&MonitorCommand{Meta: m}),
		"job dispatch":                      f(&JobDispatchCommand{Meta: m}),
		"job eval":                          f(&JobEvalCommand{Meta: m}),
		"job periodic":                      f(&GroupCommand{Meta: m, Name: "job periodic", Synopsis_: "Interact with periodic jobs"}),
		"job periodic force":                f(&JobPeriodicForceCommand{Meta: m}),
		"ui":                                f(&UICommand{Meta: m}),

		// Scheduler configuration (a block of its own keeps the alignment above).
		"operator gossip":                  f(&GroupCommand{Meta: m, Name: "operator gossip", Synopsis_: "Provides access to the gossip subsystem"}),
		"operator gossip keyring":          f(&OperatorGossipKeyringCommand{Meta: m}),
		"operator gossip keyring generate": f(&OperatorGossipKeyringVerbCommand{Meta: m, Verb: "generate", Name: "operator gossip keyring generate"}),
		"operator gossip keyring list":     f(&OperatorGossipKeyringVerbCommand{Meta: m, Verb: "list", Name: "operator gossip keyring list"}),
		"operator gossip keyring install":  f(&OperatorGossipKeyringVerbCommand{Meta: m, Verb: "install", Name: "operator gossip keyring install"}),
		"operator gossip keyring use":      f(&OperatorGossipKeyringVerbCommand{Meta: m, Verb: "use", Name: "operator gossip keyring use"}),
		"operator gossip keyring remove":   f(&OperatorGossipKeyringVerbCommand{Meta: m, Verb: "remove", Name: "operator gossip keyring remove"}),
		"operator keygen":                  f(&OperatorGossipKeyringVerbCommand{Meta: m, Verb: "generate", Name: "operator keygen"}),
		"operator autopilot":               f(&GroupCommand{Meta: m, Name: "operator autopilot", Synopsis_: "Provides access to the Autopilot subsystem"}),
		"operator autopilot get-config":    f(&OperatorAutopilotGetCommand{Meta: m}),
		"operator autopilot set-config":    f(&OperatorAutopilotSetCommand{Meta: m}),
		"operator autopilot health":        f(&OperatorAutopilotHealthCommand{Meta: m}),
		"operator scheduler":               f(&GroupCommand{Meta: m, Name: "operator scheduler", Synopsis_: "Provides access to the scheduler configuration"}),
		"operator scheduler get-config":    f(&OperatorSchedulerGetConfigCommand{Meta: m}),
		"operator scheduler set-config":    f(&OperatorSchedulerSetConfigCommand{Meta: m}),

		// Deployments.
		"deployment":         f(&GroupCommand{Meta: m, Name: "deployment", Synopsis_: "Interact with deployments"}),
		"deployment list":    f(&DeploymentListCommand{Meta: m}),
		"deployment status":  f(&DeploymentStatusCommand{Meta: m}),
		"deployment promote": f(&DeploymentPromoteCommand{Meta: m}),
		"deployment fail":    f(&DeploymentFailCommand{Meta: m}),
		"deployment pause":   f(&DeploymentPauseCommand{Meta: m}),
		"deployment resume":  f(&DeploymentResumeCommand{Meta: m}),
		"deployment unblock": f(&DeploymentUnblockCommand{Meta: m}),
		"job promote":        f(&JobPromoteCommand{Meta: m}),
		"job deployments":    f(&JobDeploymentsCommand{Meta: m}),
		// Garbage collection and summary repair.
		"system":                     f(&GroupCommand{Meta: m, Name: "system", Synopsis_: "Interact with the system API"}),
		"system gc":                  f(&SystemGCCommand{Meta: m}),
		"system reconcile":           f(&GroupCommand{Meta: m, Name: "system reconcile", Synopsis_: "Performs system reconciliation tasks"}),
		"system reconcile summaries": f(&SystemReconcileSummariesCommand{Meta: m}),

		// Nomad-native services.
		"service":        f(&GroupCommand{Meta: m, Name: "service", Synopsis_: "Interact with registered services"}),
		"service list":   f(&ServiceListCommand{Meta: m}),
		"service info":   f(&ServiceInfoCommand{Meta: m}),
		"service delete": f(&ServiceDeleteCommand{Meta: m}),

		// Namespaces and node pools.
		"namespace":        f(&GroupCommand{Meta: m, Name: "namespace", Synopsis_: "Interact with namespaces"}),
		"namespace list":   f(&NamespaceListCommand{Meta: m}),
		"namespace status": f(&NamespaceStatusCommand{Meta: m}),
		"namespace apply":  f(&NamespaceApplyCommand{Meta: m}),
		"namespace delete": f(&NamespaceDeleteCommand{Meta: m}),
		"node pool":        f(&GroupCommand{Meta: m, Name: "node pool", Synopsis_: "Interact with node pools"}),
		"node pool list":   f(&NodePoolListCommand{Meta: m}),
		"node pool info":   f(&NodePoolInfoCommand{Meta: m}),
		"node pool apply":  f(&NodePoolApplyCommand{Meta: m}),
		"node pool delete": f(&NodePoolDeleteCommand{Meta: m}),
		"node pool nodes":  f(&NodePoolNodesCommand{Meta: m}),
		"node pool jobs":   f(&NodePoolJobsCommand{Meta: m}),

		// Certificates for TLS.
		"tls":             f(&GroupCommand{Meta: m, Name: "tls", Synopsis_: "Generate self-signed TLS certificates for Drover"}),
		"tls ca":          f(&GroupCommand{Meta: m, Name: "tls ca", Synopsis_: "Manage the certificate authority"}),
		"tls ca create":   f(&TLSCACreateCommand{Meta: m}),
		"tls cert":        f(&GroupCommand{Meta: m, Name: "tls cert", Synopsis_: "Manage certificates"}),
		"tls cert create": f(&TLSCertCreateCommand{Meta: m}),

		// Nomad's older top-level aliases.
		"run":      f(&JobRunCommand{Meta: m}),
		"stop":     f(&JobStopCommand{Meta: m}),
		"plan":     f(&JobPlanCommand{Meta: m}),
		"validate": f(&JobValidateCommand{Meta: m}),
		"inspect":  f(&JobInspectCommand{Meta: m}),
		"agent": func() (mcli.Command, error) {
			if AgentCommandFactory == nil {
				return &missingAgent{ui: ui}, nil
			}
			return AgentCommandFactory()
		},
	}
	addACLCommands(cmds, m)
	addVarCommands(cmds, m)
	return withCompletion(cmds, m)
}

var hiddenAliases = map[string]bool{"init": true, "run": true, "stop": true, "plan": true, "validate": true, "inspect": true}

func helpFunc(cmds map[string]mcli.CommandFactory) string {
	var names []string
	width := 0
	for name := range cmds {
		if strings.Contains(name, " ") || hiddenAliases[name] {
			continue
		}
		names = append(names, name)
		width = max(width, len(name))
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s [-version] [-help] [-autocomplete-(un)install] <command> [args]\n\n", BinaryName)
	b.WriteString("Common commands:\n")
	for _, name := range names {
		syn := ""
		if c, err := cmds[name](); err == nil {
			syn = c.Synopsis()
		}
		fmt.Fprintf(&b, "    %-*s  %s\n", width, name, syn)
	}
	return b.String()
}

// writer is where raw bytes (logs) go: the Meta's writer when it has one.
func (m *Meta) writer() io.Writer {
	if m.out != nil {
		return m.out
	}
	return os.Stdout
}

// Meta holds what every command shares: the UI and the global flags.
type Meta struct {
	Ui mcli.Ui
	// out receives raw bytes (logs); nil means os.Stdout.
	out io.Writer

	address, region, namespace, token string
	caCert, clientCert, clientKey     string
	tlsServerName                     string
	tlsSkipVerify                     bool
}

// FlagSet returns a flag set with the global flags registered.
func (m *Meta) FlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&m.address, "address", "", "")
	fs.StringVar(&m.region, "region", "", "")
	fs.StringVar(&m.namespace, "namespace", "", "")
	fs.StringVar(&m.token, "token", "", "")
	fs.StringVar(&m.caCert, "ca-cert", "", "")
	fs.StringVar(&m.clientCert, "client-cert", "", "")
	fs.StringVar(&m.clientKey, "client-key", "", "")
	fs.StringVar(&m.tlsServerName, "tls-server-name", "", "")
	fs.BoolVar(&m.tlsSkipVerify, "tls-skip-verify", false, "")
	return fs
}

// allNamespaces reports whether the command runs across namespaces
// (-namespace='*', else NOMAD_NAMESPACE='*').
func (m *Meta) allNamespaces() bool {
	ns := m.namespace
	if ns == "" {
		ns = os.Getenv("NOMAD_NAMESPACE")
	}
	return ns == "*"
}

// apiClient is Client for a command's Run: on failure it prints Nomad's
// error and reports false, so the command returns 1.
func (m *Meta) apiClient() (*api.Client, bool) {
	client, err := m.Client()
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error initializing client: %s", err))
		return nil, false
	}
	return client, true
}

// Client builds an api client: api.DefaultConfig reads NOMAD_ADDR,
// NOMAD_TOKEN, NOMAD_NAMESPACE, NOMAD_REGION and the TLS variables; flags win.
func (m *Meta) Client() (*api.Client, error) {
	cfg, err := m.clientConfig()
	if err != nil {
		return nil, err
	}
	return api.NewClient(cfg)
}

// clientConfig is the api client configuration Client uses.
func (m *Meta) clientConfig() (*api.Config, error) {
	cfg := api.DefaultConfig()
	if m.address != "" {
		cfg.Address = m.address
	}
	if m.region != "" {
		cfg.Region = m.region
	}
	if m.namespace != "" {
		cfg.Namespace = m.namespace
	}
	if m.token != "" {
		cfg.SecretID = m.token
	}
	if m.caCert != "" || m.clientCert != "" || m.clientKey != "" || m.tlsServerName != "" || m.tlsSkipVerify {
		if cfg.TLSConfig == nil {
			cfg.TLSConfig = &api.TLSConfig{}
		}
		if m.caCert != "" {
			cfg.TLSConfig.CACert = m.caCert
		}
		if m.clientCert != "" {
			cfg.TLSConfig.ClientCert = m.clientCert
		}
		if m.clientKey != "" {
			cfg.TLSConfig.ClientKey = m.clientKey
		}
		if m.tlsServerName != "" {
			cfg.TLSConfig.TLSServerName = m.tlsServerName
		}
		if m.tlsSkipVerify {
			cfg.TLSConfig.Insecure = true
		}
	}
	return cfg, nil
}

// globalHelp is appended to each command's help.
const globalHelp = `
General Options:

  -address=<addr>
    The address of the agent. Overrides NOMAD_ADDR. Default http://127.0.0.1:4646.

  -region=<region>
    The region to forward requests to. Overrides NOMAD_REGION.

  -namespace=<namespace>
    The target namespace. Overrides NOMAD_NAMESPACE.

  -token=<token>
    The ACL token (SecretID). Overrides NOMAD_TOKEN.

  -ca-cert, -client-cert, -client-key, -tls-server-name, -tls-skip-verify
    TLS settings; override NOMAD_CACERT, NOMAD_CLIENT_CERT, NOMAD_CLIENT_KEY,
    NOMAD_TLS_SERVER_NAME, NOMAD_SKIP_VERIFY.
`

// AutocompleteFlags lists the global flags for shell completion.
func (m *Meta) AutocompleteFlags() complete.Flags {
	return complete.Flags{
		"-address": complete.PredictAnything, "-region": complete.PredictAnything,
		"-namespace": complete.PredictAnything, "-token": complete.PredictAnything,
	}
}

// AutocompleteArgs predicts nothing by default.
func (m *Meta) AutocompleteArgs() complete.Predictor { return complete.PredictNothing }

// GroupCommand is a parent verb ("job", "alloc", ...) that only shows help.
type GroupCommand struct {
	Meta
	Name      string
	Synopsis_ string
}

func (c *GroupCommand) Help() string {
	return fmt.Sprintf("Usage: %s %s <subcommand> [options] [args]\n\n  %s.", BinaryName, c.Name, c.Synopsis_)
}
func (c *GroupCommand) Synopsis() string   { return c.Synopsis_ }
func (c *GroupCommand) Run(_ []string) int { return mcli.RunResultHelp }

// VersionCommand prints the version.
type VersionCommand struct{ Meta }

func (c *VersionCommand) Help() string {
	return "Usage: " + BinaryName + " version\n\n  Prints the Drover version."
}
func (c *VersionCommand) Synopsis() string { return "Prints the Drover version" }
func (c *VersionCommand) Run(_ []string) int {
	c.Ui.Output("Drover v" + Version)
	return 0
}

type missingAgent struct{ ui mcli.Ui }

func (*missingAgent) Help() string     { return "Usage: " + BinaryName + " agent [options]" }
func (*missingAgent) Synopsis() string { return "Runs a Drover agent" }
func (a *missingAgent) Run(_ []string) int {
	a.ui.Error("agent: not linked in this build")
	return 1
}
