package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// OperatorSchedulerGetConfigCommand is `operator scheduler get-config`.
type OperatorSchedulerGetConfigCommand struct{ Meta }

func (c *OperatorSchedulerGetConfigCommand) Synopsis() string {
	return "Display the current scheduler configuration"
}
func (c *OperatorSchedulerGetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator scheduler get-config [options]

  Displays the cluster's scheduler configuration: the placement algorithm,
  preemption per scheduler type, memory oversubscription, and whether job
  registration is refused or the eval broker paused.

Scheduler Get Config Options:

  -json          Output the scheduler configuration as JSON.
  -t <template>  Format the scheduler configuration with a Go template.
`) + "\n" + globalHelp
}

func (c *OperatorSchedulerGetConfigCommand) Run(args []string) int {
	return runQuery(&c.Meta, c, args, query[*api.SchedulerConfiguration]{
		name: "operator scheduler get-config", takes: "no arguments", errPrefix: "Error querying scheduler configuration",
		fetch: func(client *api.Client, _ []string) (*api.SchedulerConfiguration, error) {
			resp, _, err := client.Operator().SchedulerGetConfiguration(nil)
			if err != nil {
				return nil, err
			}
			if resp.SchedulerConfig == nil {
				return nil, errors.New("the server returned none")
			}
			return resp.SchedulerConfig, nil
		},
		text: func(cfg *api.SchedulerConfiguration) string {
			p := cfg.PreemptionConfig
			return formatKV([]string{
				fmt.Sprintf("Scheduler Algorithm|%s", cfg.SchedulerAlgorithm),
				fmt.Sprintf("Memory Oversubscription|%v", cfg.MemoryOversubscriptionEnabled),
				fmt.Sprintf("Reject Job Registration|%v", cfg.RejectJobRegistration),
				fmt.Sprintf("Pause Eval Broker|%v", cfg.PauseEvalBroker),
				fmt.Sprintf("Preemption System Scheduler|%v", p.SystemSchedulerEnabled),
				fmt.Sprintf("Preemption Service Scheduler|%v", p.ServiceSchedulerEnabled),
				fmt.Sprintf("Preemption Batch Scheduler|%v", p.BatchSchedulerEnabled),
				fmt.Sprintf("Preemption SysBatch Scheduler|%v", p.SysBatchSchedulerEnabled),
				fmt.Sprintf("Modify Index|%d", cfg.ModifyIndex),
			})
		},
	})
}

// optBool is a boolean flag that remembers whether it was given, so
// set-config changes only the settings named on the command line.
type optBool struct {
	set bool
	v   bool
}

func (b *optBool) String() string   { return strconv.FormatBool(b.v) }
func (b *optBool) IsBoolFlag() bool { return true }
func (b *optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("must be true or false")
	}
	b.set, b.v = true, v
	return nil
}

// apply writes the flag's value to dst when the flag was given.
func (b *optBool) apply(dst *bool) {
	if b.set {
		*dst = b.v
	}
}

// OperatorSchedulerSetConfigCommand is `operator scheduler set-config`.
type OperatorSchedulerSetConfigCommand struct{ Meta }

func (c *OperatorSchedulerSetConfigCommand) Synopsis() string {
	return "Modify the current scheduler configuration"
}
func (c *OperatorSchedulerSetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator scheduler set-config [options]

  Changes the cluster's scheduler configuration. Only the settings given
  are changed; the others keep their current values. Schedulers use the
  new configuration from their next evaluation on, without a restart.

Scheduler Set Config Options:

  -check-index=<index>
    Update only if the configuration's modify index is still <index>
    (check-and-set).

  -scheduler-algorithm=<binpack|spread>
    Pack allocations onto the fullest nodes (binpack) or place them on the
    emptiest ones (spread).

  -memory-oversubscription=<true|false>
    Let tasks use their memory_max when the client has memory to spare.

  -reject-job-registration=<true|false>
    Refuse job registration, dispatch and scale (every request, as there
    are no management tokens without ACLs).

  -pause-eval-broker=<true|false>
    Stop the leader handing evaluations to the schedulers; new ones stay
    pending until it is resumed.

  -preempt-batch-scheduler=<true|false>
  -preempt-service-scheduler=<true|false>
  -preempt-sysbatch-scheduler=<true|false>
  -preempt-system-scheduler=<true|false>
    Let placements of that scheduler type evict allocations of jobs at
    least 10 priority points lower.
`) + "\n" + globalHelp
}

func (c *OperatorSchedulerSetConfigCommand) Run(args []string) int {
	fs := c.FlagSet("operator scheduler set-config")
	var checkIndex, algorithm string
	var oversub, reject, pause, batch, service, sysbatch, system optBool
	fs.StringVar(&checkIndex, "check-index", "", "")
	fs.StringVar(&algorithm, "scheduler-algorithm", "", "")
	fs.Var(&oversub, "memory-oversubscription", "")
	fs.Var(&reject, "reject-job-registration", "")
	fs.Var(&pause, "pause-eval-broker", "")
	fs.Var(&batch, "preempt-batch-scheduler", "")
	fs.Var(&service, "preempt-service-scheduler", "")
	fs.Var(&sysbatch, "preempt-sysbatch-scheduler", "")
	fs.Var(&system, "preempt-system-scheduler", "")
	if !c.parseSetFlags(c, fs, args) {
		return 1
	}
	switch algorithm {
	case "", string(api.SchedulerAlgorithmBinpack), string(api.SchedulerAlgorithmSpread):
	default:
		c.Ui.Error(fmt.Sprintf("Invalid -scheduler-algorithm %q: must be %q or %q", algorithm, api.SchedulerAlgorithmBinpack, api.SchedulerAlgorithmSpread))
		return 1
	}
	var cas uint64
	if checkIndex != "" {
		v, err := strconv.ParseUint(checkIndex, 10, 64)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Invalid -check-index %q: must be a non-negative integer", checkIndex))
			return 1
		}
		cas = v
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	resp, _, err := client.Operator().SchedulerGetConfiguration(nil)
	if err != nil || resp.SchedulerConfig == nil {
		c.Ui.Error(fmt.Sprintf("Error querying scheduler configuration: %v", err))
		return 1
	}
	cfg := resp.SchedulerConfig
	if algorithm != "" {
		cfg.SchedulerAlgorithm = api.SchedulerAlgorithm(algorithm)
	}
	oversub.apply(&cfg.MemoryOversubscriptionEnabled)
	reject.apply(&cfg.RejectJobRegistration)
	pause.apply(&cfg.PauseEvalBroker)
	batch.apply(&cfg.PreemptionConfig.BatchSchedulerEnabled)
	service.apply(&cfg.PreemptionConfig.ServiceSchedulerEnabled)
	sysbatch.apply(&cfg.PreemptionConfig.SysBatchSchedulerEnabled)
	system.apply(&cfg.PreemptionConfig.SystemSchedulerEnabled)

	var set *api.SchedulerSetConfigurationResponse
	if checkIndex != "" {
		cfg.ModifyIndex = cas
		set, _, err = client.Operator().SchedulerCASConfiguration(cfg, nil)
	} else {
		set, _, err = client.Operator().SchedulerSetConfiguration(cfg, nil)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error setting scheduler configuration: %s", err))
		return 1
	}
	if !set.Updated {
		c.Ui.Error("Scheduler configuration could not be atomically updated, please try again")
		return 1
	}
	c.Ui.Output("Scheduler configuration updated!")
	return 0
}
