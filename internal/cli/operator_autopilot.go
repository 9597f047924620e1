package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// OperatorAutopilotGetCommand is `operator autopilot get-config`.
type OperatorAutopilotGetCommand struct{ Meta }

func (c *OperatorAutopilotGetCommand) Synopsis() string {
	return "Display the current Autopilot configuration"
}
func (c *OperatorAutopilotGetCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator autopilot get-config [options]

  Displays the cluster's Autopilot configuration: dead server cleanup, the
  health thresholds and how long a new server must be stable.

Autopilot Get Config Options:

  -json          Output the configuration as JSON.
  -t <template>  Format the configuration with a Go template.
`) + "\n" + globalHelp
}

func (c *OperatorAutopilotGetCommand) Run(args []string) int {
	return runQuery(&c.Meta, c, args, query[*api.AutopilotConfiguration]{
		name: "operator autopilot get-config", takes: "no arguments", errPrefix: "Error querying Autopilot configuration",
		fetch: func(client *api.Client, _ []string) (*api.AutopilotConfiguration, error) {
			cfg, _, err := client.Operator().AutopilotGetConfiguration(nil)
			return cfg, err
		},
		text: func(cfg *api.AutopilotConfiguration) string {
			return formatKV([]string{
				fmt.Sprintf("CleanupDeadServers|%v", cfg.CleanupDeadServers),
				fmt.Sprintf("LastContactThreshold|%s", cfg.LastContactThreshold),
				fmt.Sprintf("MaxTrailingLogs|%d", cfg.MaxTrailingLogs),
				fmt.Sprintf("MinQuorum|%d", cfg.MinQuorum),
				fmt.Sprintf("ServerStabilizationTime|%s", cfg.ServerStabilizationTime),
				fmt.Sprintf("EnableRedundancyZones|%v", cfg.EnableRedundancyZones),
				fmt.Sprintf("DisableUpgradeMigration|%v", cfg.DisableUpgradeMigration),
				fmt.Sprintf("EnableCustomUpgrades|%v", cfg.EnableCustomUpgrades),
			})
		},
	})
}

// OperatorAutopilotSetCommand is `operator autopilot set-config`.
type OperatorAutopilotSetCommand struct{ Meta }

func (c *OperatorAutopilotSetCommand) Synopsis() string {
	return "Modify the current Autopilot configuration"
}
func (c *OperatorAutopilotSetCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator autopilot set-config [options]

  Changes the Autopilot configuration; options not given keep their value.

Autopilot Set Config Options:

  -cleanup-dead-servers=[true|false]
      Remove dead servers from Raft (a majority and -min-quorum always stay).
  -last-contact-threshold=<duration>
      How long a server may go without hearing from the leader and stay
      healthy.
  -max-trailing-logs=<n>
      How many Raft entries a healthy server may lag behind the leader.
  -min-quorum=<n>
      The fewest servers dead server cleanup leaves.
  -server-stabilization-time=<duration>
      How long a new server must be healthy before it gets a vote.
  -enable-redundancy-zones, -disable-upgrade-migration,
  -enable-custom-upgrades=[true|false]
      Nomad Enterprise settings: stored, not acted on.
`) + "\n" + globalHelp
}

func (c *OperatorAutopilotSetCommand) Run(args []string) int {
	var cleanup, zones, noMigration, customUpgrades optBool
	var lastContact, trailing, minQuorum, stabilization string
	fs := c.FlagSet("operator autopilot set-config")
	fs.Var(&cleanup, "cleanup-dead-servers", "")
	fs.Var(&zones, "enable-redundancy-zones", "")
	fs.Var(&noMigration, "disable-upgrade-migration", "")
	fs.Var(&customUpgrades, "enable-custom-upgrades", "")
	fs.StringVar(&lastContact, "last-contact-threshold", "", "")
	fs.StringVar(&trailing, "max-trailing-logs", "", "")
	fs.StringVar(&minQuorum, "min-quorum", "", "")
	fs.StringVar(&stabilization, "server-stabilization-time", "", "")
	if !c.parseSetFlags(c, fs, args) {
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	cfg, _, err := client.Operator().AutopilotGetConfiguration(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying Autopilot configuration: %s", err))
		return 1
	}
	cleanup.apply(&cfg.CleanupDeadServers)
	zones.apply(&cfg.EnableRedundancyZones)
	noMigration.apply(&cfg.DisableUpgradeMigration)
	customUpgrades.apply(&cfg.EnableCustomUpgrades)
	for _, d := range []struct {
		flag, val string
		dst       *time.Duration
	}{{"last-contact-threshold", lastContact, &cfg.LastContactThreshold}, {"server-stabilization-time", stabilization, &cfg.ServerStabilizationTime}} {
		if d.val == "" {
			continue
		}
		v, err := time.ParseDuration(d.val)
		if err != nil || v < 0 {
			c.Ui.Error(fmt.Sprintf("Invalid -%s %q: must be a non-negative duration such as 200ms or 10s", d.flag, d.val))
			return 1
		}
		*d.dst = v
	}
	if trailing != "" {
		v, err := strconv.ParseUint(trailing, 10, 64)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Invalid -max-trailing-logs %q: must be a non-negative integer", trailing))
			return 1
		}
		cfg.MaxTrailingLogs = v
	}
	if minQuorum != "" {
		v, err := strconv.ParseUint(minQuorum, 10, 32)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Invalid -min-quorum %q: must be a non-negative integer", minQuorum))
			return 1
		}
		cfg.MinQuorum = uint(v)
	}
	updated, _, err := client.Operator().AutopilotCASConfiguration(cfg, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error setting Autopilot configuration: %s", err))
		return 1
	}
	if !updated {
		c.Ui.Error("Autopilot configuration could not be atomically updated, please try again")
		return 1
	}
	c.Ui.Output("Configuration updated!")
	return 0
}

// OperatorAutopilotHealthCommand is `operator autopilot health`.
type OperatorAutopilotHealthCommand struct{ Meta }

func (c *OperatorAutopilotHealthCommand) Synopsis() string {
	return "Display the health of the servers as Autopilot sees it"
}
func (c *OperatorAutopilotHealthCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator autopilot health [options]

  Displays each server's health from the leader's point of view: its gossip
  status, Raft progress and whether it votes; and how many servers the
  cluster can lose without an outage.

Autopilot Health Options:

  -json   Output the health as JSON.
`) + "\n" + globalHelp
}

func (c *OperatorAutopilotHealthCommand) Run(args []string) int {
	return runQuery(&c.Meta, c, args, query[*api.OperatorHealthReply]{
		name: "operator autopilot health", takes: "no arguments", noTemplate: true, errPrefix: "Error querying Autopilot health",
		fetch: func(client *api.Client, _ []string) (*api.OperatorHealthReply, error) {
			h, _, err := client.Operator().AutopilotServerHealth(nil)
			if err != nil {
				return unhealthyReport(err)
			}
			return h, nil
		},
		text: func(h *api.OperatorHealthReply) string {
			rows := []string{"Name|ID|Address|Serf Status|Voter|Leader|Healthy|Last Contact|Last Term|Last Index"}
			for _, s := range h.Servers {
				rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%v|%v|%v|%s|%d|%d", s.Name, s.ID, s.Address, s.SerfStatus,
					s.Voter, s.Leader, s.Healthy, s.LastContact, s.LastTerm, s.LastIndex))
			}
			return formatKV([]string{
				fmt.Sprintf("Healthy|%v", h.Healthy),
				fmt.Sprintf("FailureTolerance|%d", h.FailureTolerance),
				fmt.Sprintf("Leader|%s", h.Leader),
				fmt.Sprintf("Voters|%s", strings.Join(h.Voters, ", ")),
			}) + "\n\nServers\n" + formatList(rows)
		},
	})
}

// unhealthyReport reads the health report out of the error the api client
// makes of an unhealthy cluster's answer (429, the report as its body): an
// operator asks for the health precisely when a server is in trouble, and
// sees it among the others. Any other error is returned as it is.
func unhealthyReport(err error) (*api.OperatorHealthReply, error) {
	var ure api.UnexpectedResponseError
	if !errors.As(err, &ure) || ure.StatusCode() != http.StatusTooManyRequests {
		return nil, err
	}
	var h api.OperatorHealthReply
	if json.Unmarshal([]byte(ure.Body()), &h) != nil || len(h.Servers) == 0 {
		return nil, err
	}
	return &h, nil
}
