package cli

import (
	"strings"

	mcli "github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
	"github.com/posener/complete"
)

// Shell completion: hashicorp/cli drives github.com/posener/complete when a
// command implements AutocompleteFlags/AutocompleteArgs, and provides
// `drover -autocomplete-install|-autocomplete-uninstall`. Every command gets
// its flags from commandFlags and its argument predictor from commandArgs, so
// the tables below are the whole contract.

// outputFlags are the -json/-t pair of the read commands.
var outputFlags = complete.Flags{"-json": complete.PredictNothing, "-t": complete.PredictAnything}

var jobspecFlags = complete.Flags{"-var": complete.PredictAnything, "-var-file": complete.PredictFiles("*"), "-json": complete.PredictNothing}

func mergeFlags(sets ...complete.Flags) complete.Flags {
	out := complete.Flags{}
	for _, s := range sets {
		for k, v := range s {
			out[k] = v
		}
	}
	return out
}

func boolFlags(names ...string) complete.Flags {
	out := complete.Flags{}
	for _, n := range names {
		out["-"+n] = complete.PredictNothing
	}
	return out
}

// commandFlags are each command's own flags (the global ones are added).
var commandFlags = map[string]complete.Flags{
	"job run": mergeFlags(jobspecFlags, boolFlags("detach", "output", "verbose", "policy-override", "preserve-counts"),
		complete.Flags{"-check-index": complete.PredictAnything}),
	"job plan":     mergeFlags(jobspecFlags, boolFlags("diff", "verbose", "policy-override", "explain")),
	"job validate": jobspecFlags,
	"job status":   mergeFlags(outputFlags, boolFlags("short", "verbose", "all-allocs", "evals"), complete.Flags{"-filter": complete.PredictAnything}),
	"job inspect":  mergeFlags(outputFlags, complete.Flags{"-version": complete.PredictAnything}),
	"job history":  mergeFlags(outputFlags, boolFlags("p"), complete.Flags{"-version": complete.PredictAnything}),
	"job stop":     boolFlags("purge", "detach", "no-shutdown-delay", "yes", "verbose"),
	"job revert":   boolFlags("detach", "verbose"),
	"job scale":    boolFlags("detach", "verbose"),
	"job restart": mergeFlags(boolFlags("all-tasks", "reschedule", "yes", "verbose"), complete.Flags{
		"-batch-size": complete.PredictAnything, "-batch-wait": complete.PredictAnything, "-group": complete.PredictAnything,
		"-task": complete.PredictAnything, "-on-error": complete.PredictSet("ask", "fail")}),
	"job dispatch": mergeFlags(boolFlags("detach", "verbose"), complete.Flags{"-meta": complete.PredictAnything,
		"-id-prefix-template": complete.PredictAnything, "-idempotency-token": complete.PredictAnything, "-priority": complete.PredictAnything}),
	"job periodic force": boolFlags("detach", "verbose"),
	"eval list": mergeFlags(outputFlags, boolFlags("verbose"), complete.Flags{
		"-job":    complete.PredictAnything,
		"-status": complete.PredictSet("pending", "blocked", "complete", "failed", "canceled"),
		"-filter": complete.PredictAnything,
	}),
	"eval status":   mergeFlags(outputFlags, boolFlags("verbose")),
	"alloc status":  mergeFlags(outputFlags, boolFlags("short", "verbose")),
	"alloc logs":    mergeFlags(boolFlags("f", "stderr", "tail", "verbose"), complete.Flags{"-n": complete.PredictAnything, "-c": complete.PredictAnything, "-task": complete.PredictAnything}),
	"alloc fs":      boolFlags("stat", "verbose"),
	"alloc stop":    boolFlags("detach", "no-shutdown-delay", "verbose"),
	"alloc restart": mergeFlags(boolFlags("all-tasks", "verbose"), complete.Flags{"-task": complete.PredictAnything}),
	"alloc signal":  mergeFlags(boolFlags("verbose"), complete.Flags{"-s": complete.PredictSet("SIGHUP", "SIGINT", "SIGKILL", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2"), "-task": complete.PredictAnything}),
	"alloc checks":  mergeFlags(outputFlags, boolFlags("verbose")),
	"node status":   mergeFlags(outputFlags, boolFlags("verbose", "self", "stats"), complete.Flags{"-filter": complete.PredictAnything}),
	"ui":            boolFlags("show-url"),
	"node drain": mergeFlags(boolFlags("enable", "disable", "no-deadline", "force", "ignore-system", "keep-ineligible", "detach", "monitor", "self", "yes"),
		complete.Flags{"-deadline": complete.PredictAnything, "-m": complete.PredictAnything, "-meta": complete.PredictAnything}),
	"node eligibility":                  boolFlags("enable", "disable", "self"),
	"node meta read":                    mergeFlags(outputFlags, complete.Flags{"-node-id": complete.PredictAnything}),
	"node meta apply":                   complete.Flags{"-node-id": complete.PredictAnything, "-unset": complete.PredictAnything},
	"operator raft list-peers":          boolFlags("json", "stale"),
	"operator raft remove-peer":         complete.Flags{"-peer-id": complete.PredictAnything, "-peer-address": complete.PredictAnything},
	"operator raft transfer-leadership": complete.Flags{"-peer-id": complete.PredictAnything, "-peer-address": complete.PredictAnything},
	"operator snapshot save":            boolFlags("stale"),
	"operator snapshot restore":         complete.Flags{},
	"operator snapshot inspect":         complete.Flags{},
	"server members":                    mergeFlags(boolFlags("verbose", "detailed", "json")),
	"server join":                       {},
	"server force-leave":                boolFlags("prune"),
	"agent-info":                        outputFlags,
	"status":                            boolFlags("verbose"),
	"monitor": mergeFlags(boolFlags("json", "log-include-location"), complete.Flags{
		"-log-level": complete.PredictSet("trace", "debug", "info", "warn", "error"),
		"-node-id":   complete.PredictAnything, "-server-id": complete.PredictAnything}),

	// Deployments.
	"deployment list":    mergeFlags(outputFlags, boolFlags("verbose")),
	"deployment status":  mergeFlags(outputFlags, boolFlags("verbose", "monitor"), complete.Flags{"-wait": complete.PredictAnything}),
	"deployment promote": mergeFlags(boolFlags("detach", "verbose"), complete.Flags{"-group": complete.PredictAnything}),
	"deployment fail":    boolFlags("detach", "verbose"),
	"deployment pause":   boolFlags("verbose"),
	"deployment resume":  boolFlags("detach", "verbose"),
	"deployment unblock": boolFlags("detach", "verbose"),
	"job promote":        mergeFlags(boolFlags("detach", "verbose"), complete.Flags{"-group": complete.PredictAnything}),
	"job deployments":    mergeFlags(outputFlags, boolFlags("latest", "all", "verbose")),
	// Garbage collection and evaluation deletion.
	"eval delete":                mergeFlags(boolFlags("yes"), complete.Flags{"-filter": complete.PredictAnything}),
	"system gc":                  {},
	"system reconcile summaries": {},

	// Nomad-native services.
	"service list":   outputFlags,
	"service info":   mergeFlags(outputFlags, boolFlags("verbose"), complete.Flags{"-filter": complete.PredictAnything}),
	"service delete": {},

	// Namespaces and node pools.
	"namespace list":   outputFlags,
	"namespace status": outputFlags,
	"namespace apply": {"-description": complete.PredictAnything, "-quota": complete.PredictAnything,
		"-json": complete.PredictNothing},
	"namespace delete": {},
	"tls ca create": mergeFlags(boolFlags("name-constraint"), complete.Flags{"-days": complete.PredictAnything,
		"-domain": complete.PredictAnything, "-common-name": complete.PredictAnything, "-additional-domain": complete.PredictAnything}),
	"tls cert create": mergeFlags(boolFlags("server", "client", "cli"), complete.Flags{"-ca": complete.PredictFiles("*.pem"),
		"-key": complete.PredictFiles("*.pem"), "-days": complete.PredictAnything, "-domain": complete.PredictAnything,
		"-region": complete.PredictAnything, "-additional-dnsname": complete.PredictAnything, "-additional-ipaddress": complete.PredictAnything}),
	"node pool list":   mergeFlags(outputFlags, complete.Flags{"-filter": complete.PredictAnything}),
	"node pool info":   outputFlags,
	"node pool apply":  boolFlags("json"),
	"node pool delete": {},
	"node pool nodes":  mergeFlags(outputFlags, boolFlags("verbose"), complete.Flags{"-filter": complete.PredictAnything}),
	"node pool jobs":   mergeFlags(outputFlags, complete.Flags{"-filter": complete.PredictAnything}),

	// Scheduler configuration.
	"operator gossip keyring": mergeFlags(boolFlags("generate", "list"),
		complete.Flags{"-install": complete.PredictAnything, "-use": complete.PredictAnything, "-remove": complete.PredictAnything}),
	"operator autopilot get-config": outputFlags,
	"operator autopilot set-config": mergeFlags(boolFlags("cleanup-dead-servers", "enable-redundancy-zones", "disable-upgrade-migration", "enable-custom-upgrades"),
		complete.Flags{"-last-contact-threshold": complete.PredictAnything, "-max-trailing-logs": complete.PredictAnything,
			"-min-quorum": complete.PredictAnything, "-server-stabilization-time": complete.PredictAnything}),
	"operator autopilot health":     boolFlags("json"),
	"operator scheduler get-config": outputFlags,
	"operator scheduler set-config": {
		"-check-index": complete.PredictAnything, "-scheduler-algorithm": complete.PredictSet("binpack", "spread"),
		"-memory-oversubscription": predictBool, "-reject-job-registration": predictBool, "-pause-eval-broker": predictBool,
		"-preempt-batch-scheduler": predictBool, "-preempt-service-scheduler": predictBool,
		"-preempt-sysbatch-scheduler": predictBool, "-preempt-system-scheduler": predictBool,
	},
}

// predictBool completes a true/false flag value.
var predictBool = complete.PredictSet("true", "false")

// commandArgs predicts each command's positional argument.
func commandArgs(name string, m *Meta) complete.Predictor {
	switch name {
	case "job run", "run", "job plan", "plan", "job validate", "validate":
		return complete.PredictOr(complete.PredictFiles("*.hcl"), complete.PredictFiles("*.nomad"), complete.PredictFiles("*.json"))
	case "job status", "job inspect", "inspect", "job history", "job stop", "stop", "job revert", "job scale", "job restart",
		"job dispatch", "job periodic force", "status", "job promote", "job deployments":
		return idPredictor(m.Client, "jobs")
	case "deployment status", "deployment promote", "deployment fail", "deployment pause", "deployment resume", "deployment unblock":
		return idPredictor(m.Client, "deployments")
	case "alloc status", "alloc logs", "alloc fs", "alloc stop", "alloc restart", "alloc signal", "alloc checks", "alloc exec":
		return idPredictor(m.Client, "allocs")
	case "eval status", "eval delete":
		return idPredictor(m.Client, "evals")
	case "node status", "node drain", "node eligibility":
		return idPredictor(m.Client, "nodes")
	case "namespace status", "namespace delete":
		return idPredictor(m.Client, "namespaces")
	case "namespace apply":
		return complete.PredictOr(complete.PredictFiles("*.hcl"), complete.PredictFiles("*.json"), idPredictor(m.Client, "namespaces"))
	case "node pool info", "node pool delete", "node pool nodes", "node pool jobs":
		return idPredictor(m.Client, "node pools")
	case "node pool apply":
		return complete.PredictOr(complete.PredictFiles("*.hcl"), complete.PredictFiles("*.json"))
	}
	return complete.PredictNothing
}

// idPredictor completes IDs of kind (jobs, allocs, evals, nodes, deployments)
// by asking the agent for the typed prefix (?prefix=, one cheap request). An
// agent that cannot be reached predicts nothing: completion must never print
// errors.
func idPredictor(newClient func() (*api.Client, error), kind string) complete.Predictor {
	return complete.PredictFunc(func(a complete.Args) []string {
		client, err := newClient()
		if err != nil {
			return nil
		}
		prefix := a.Last
		var ids []string
		switch kind {
		case "jobs":
			stubs, _, err := client.Jobs().PrefixList(prefix)
			if err != nil {
				return nil
			}
			for _, s := range stubs {
				ids = append(ids, s.ID)
			}
		case "allocs":
			stubs, _, err := client.Allocations().PrefixList(prefix)
			if err != nil {
				return nil
			}
			for _, s := range stubs {
				ids = append(ids, s.ID)
			}
		case "evals":
			evals, _, err := client.Evaluations().PrefixList(prefix)
			if err != nil {
				return nil
			}
			for _, e := range evals {
				ids = append(ids, e.ID)
			}
		case "deployments":
			ds, _, err := client.Deployments().PrefixList(prefix)
			if err != nil {
				return nil
			}
			for _, d := range ds {
				ids = append(ids, d.ID)
			}
		case "namespaces":
			list, _, err := client.Namespaces().PrefixList(prefix, nil)
			if err != nil {
				return nil
			}
			for _, n := range list {
				ids = append(ids, n.Name)
			}
		case "node pools":
			list, _, err := client.NodePools().PrefixList(prefix, nil)
			if err != nil {
				return nil
			}
			for _, p := range list {
				ids = append(ids, p.Name)
			}
		case "nodes":
			stubs, _, err := client.Nodes().PrefixList(prefix)
			if err != nil {
				return nil
			}
			for _, s := range stubs {
				ids = append(ids, s.ID)
			}
		}
		// The agent filters already; filter again so an agent that ignores
		// ?prefix= cannot offer words that do not complete what was typed.
		out := ids[:0]
		for _, id := range ids {
			if strings.HasPrefix(id, prefix) {
				out = append(out, id)
			}
		}
		return out
	})
}

// completing gives a command the completion of its verb path.
type completing struct {
	mcli.Command
	name string
	meta *Meta
}

func (c *completing) AutocompleteFlags() complete.Flags {
	name := c.name
	if alias, ok := aliasOf[name]; ok {
		name = alias
	}
	return mergeFlags(c.meta.AutocompleteFlags(), commandFlags[name])
}

func (c *completing) AutocompleteArgs() complete.Predictor { return commandArgs(c.name, c.meta) }

// aliasOf maps Nomad's older top-level verbs to the command they run.
var aliasOf = map[string]string{"run": "job run", "plan": "job plan", "validate": "job validate", "inspect": "job inspect", "stop": "job stop"}

// withCompletion wraps every factory so each command completes its flags and
// arguments. Group verbs ("job", "alloc", ...) are left as they are: the
// library completes their subcommands from the map keys.
func withCompletion(cmds map[string]mcli.CommandFactory, m Meta) map[string]mcli.CommandFactory {
	out := make(map[string]mcli.CommandFactory, len(cmds))
	for name, f := range cmds {
		name, f := name, f
		out[name] = func() (mcli.Command, error) {
			cmd, err := f()
			if err != nil || cmd == nil {
				return cmd, err
			}
			if _, group := cmd.(*GroupCommand); group || name == "agent" {
				return cmd, nil
			}
			mm := m
			return &completing{Command: cmd, name: name, meta: &mm}, nil
		}
	}
	return out
}
