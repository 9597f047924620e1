package agent

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/agent/config"
	"github.com/drover-project/drover/internal/version"
)

// Command is `drover agent`.
type Command struct {
	Stdout, Stderr io.Writer
	// signals is overridable in tests.
	signals chan os.Signal
}

// Help implements cli.Command.
func (c *Command) Help() string {
	return strings.TrimSpace(`
Usage: drover agent [options]

  Starts the Drover agent: a server, a client, or both (-dev).
  Accepts Nomad's agent flags and configuration files (HCL or JSON; files
  without an extension are detected by content).

Options:
  -dev                 Server and client in one process, in memory, on 127.0.0.1,
                       with raw_exec enabled.
  -server / -client    Enable the server / client.
  -config=<path>       Config file or directory (repeatable, merged in order).
  -data-dir=<path>     State directory.
  -bind=<addr>         Address to bind all listeners to.
  -servers=<addrs>     Comma-separated server RPC addresses (clients).
  -node=<name>         Node name.      -dc=<dc>   Datacenter.
  -region=<region>     Region.         -log-level=<level>

Server cluster options (servers find each other by gossip on the serf port):
  -bootstrap-expect=<n>  Elect a leader once n servers are in the gossip pool
                         (every server of the cluster sets the same n).
  -join=<addr>           Join the servers' gossip pool at start (repeatable).
  -retry-join=<addr>     Join, retrying until it succeeds (repeatable).
  -retry-interval=<dur>  Wait between -retry-join attempts (default 30s).
  -retry-max=<n>         Give up after n -retry-join attempts (0: never).
  -encrypt=<key>         Gossip encryption key (operator gossip keyring
                         generate); every server needs the same one.
  -rejoin                Rejoin the gossip pool after leaving it.
`)
}

// Synopsis implements cli.Command.
func (c *Command) Synopsis() string { return "Runs a Drover agent" }

// Run implements cli.Command.
func (c *Command) Run(args []string) int {
	stderr := c.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	cfg, _, _, err := config.ParseAgentArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "Error: invalid configuration:\n%v\n", err)
		return 1
	}
	level := hclog.LevelFromString(cfg.LogLevel)
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	// An intercept logger, so that /v1/agent/monitor can stream every line
	// at its reader's level, whatever level the agent writes at.
	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "agent", Level: level, Output: stderr, JSONFormat: cfg.LogJSON})
	logger.Info("starting Drover agent", "version", version.String(), "dev", cfg.DevMode)
	a, err := New(cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "Error starting agent: %v\n", err)
		return 1
	}
	logger.Info("agent started", "http", a.HTTPAddr(), "server", cfg.Server != nil && cfg.Server.Enabled,
		"client", cfg.Client != nil && cfg.Client.Enabled)

	sigs := c.signals
	if sigs == nil {
		sigs = make(chan os.Signal, 4)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
	}
	var caught os.Signal
	var fatal error
wait:
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				reload(a, args, logger)
				continue
			}
			logger.Info("caught signal; shutting down", "signal", sig.String())
			caught = sig
			break wait
		case fatal = <-a.fatalCh:
			// retry_join gave up (join.go): as Nomad, the agent exits.
			logger.Error("shutting down", "error", fatal)
			break wait
		}
	}
	stopWatch := watchShutdownSignals(sigs, a.Hurry, os.Exit, logger)
	defer stopWatch()
	if leaves(cfg, caught) {
		a.Leave()
	}
	if err := a.Shutdown(); err != nil {
		logger.Error("shutdown error", "error", err)
		return 1
	}
	if fatal != nil {
		fmt.Fprintf(stderr, "Error: %v\n", fatal)
		return 1
	}
	return 0
}

// reload re-reads the configuration files on SIGHUP and applies what can
// change while running: the tls block's certificates and CA. Anything else
// needs a restart; a bad configuration leaves the running one in force.
func reload(a *Agent, args []string, logger hclog.Logger) {
	logger.Info("caught SIGHUP: reloading configuration")
	cfg, _, _, err := config.ParseAgentArgs(args)
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil {
		err = a.reloadTLS(cfg)
	}
	if err != nil {
		logger.Error("configuration reload failed; the running configuration stays in force", "error", err)
		return
	}
	logger.Info("configuration reloaded (only the tls block's files apply without a restart)")
}

// leaves reports whether the agent leaves on this signal: leave_on_interrupt
// for SIGINT, leave_on_terminate for SIGTERM. A leaving client stops its
// tasks; otherwise they keep running for the next agent to re-attach (a dev
// agent stops them in any case: it keeps no state).
func leaves(cfg *config.Config, sig os.Signal) bool {
	switch sig {
	case os.Interrupt:
		return cfg.LeaveOnInterrupt
	case syscall.SIGTERM:
		return cfg.LeaveOnTerminate
	}
	return false
}

// watchShutdownSignals handles the signals that arrive while the agent
// shuts down (before, a second SIGINT or SIGTERM was swallowed and the
// agent could only be SIGKILLed while it waited out a drain deadline or a
// shutdown_delay of hours). The second one hurries the shutdown: the
// drain on shutdown is abandoned and no shutdown_delay is waited, but the
// tasks the shutdown stops are still stopped (kill signal, kill_timeout).
// The third one exits at once with status 1, as Nomad exits on a second
// signal, leaving whatever still runs. The returned func stops watching.
func watchShutdownSignals(sigs <-chan os.Signal, hurry func(), exit func(int), logger hclog.Logger) (stop func()) {
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if sig == syscall.SIGHUP {
					continue
				}
				n++
				if n == 1 {
					logger.Warn("caught a second signal while shutting down: the drain and shutdown delays are skipped; tasks are still stopped (a third signal exits at once)",
						"signal", sig.String())
					hurry()
					continue
				}
				logger.Error("caught a third signal while shutting down: exiting now", "signal", sig.String())
				exit(1)
				return
			}
		}
	}()
	return func() { close(done) }
}
