// Package unsupported is the one table of jobspec features Drover accepts on
// the wire but does not act on yet, and the check that walks a job against
// it. It must never change the job it checks, nor depend on the engine's
// state: a check is a pure function of the job and the driver catalog.
package unsupported

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"text/template/parse"

	"github.com/drover-project/drover/internal/client/getter"
	"github.com/drover-project/drover/internal/client/template"
	"github.com/drover-project/drover/internal/structs"
)

// This file is the one table of jobspec features Drover accepts on the wire
// (they are api types, so nothing a user wrote is lost) but does not act on
// yet. Each entry is refused (the registration fails with a 400 naming the
// block and where it is) when running without it would be unsafe or would
// silently break the task, and warned about otherwise (the job runs; the
// response's Warnings, printed by `job run|plan|validate`, say what is
// ignored). When a feature is built, delete its line.
//
// How the table was made: every field of api.Job, TaskGroup, Task, Resources,
// NetworkResource, Port, Service and the blocks below them was looked up in
// the engine (apiconv, scheduler, server, client, drivers). Fields the engine
// honours are not listed: identity and placement fields, count, constraints,
// affinities, spreads, datacenters, node_pool, priority, all_at_once, meta,
// periodic, parameterized + dispatch_payload, restart, reschedule (the
// reconciler applies its delays), update (deployments), ephemeral_disk.size, group networks in host mode with
// static/dynamic ports and `to`, devices, cpu, memory, memory_max, env,
// kill_timeout, kill_signal, leader, lifecycle, logs, static host volumes
// (group volume of type "host", task volume_mount), group scaling (stored
// and served as a policy; min/max bound job scale), driver config (checked against the driver's schema below).
//
// Blocks that the api client's Canonicalize fills in for every job
// (migrate) only count as set when they differ from those
// defaults: a user who never wrote them is not warned.

// DriverCatalog is what the checks need to know about task drivers; the
// server passes internal/drivers/catalog.Builtin.
type DriverCatalog interface {
	// CheckTaskConfig reports whether driver is built into Drover and, if
	// it is, whether config is valid for it.
	CheckTaskConfig(driver string, config map[string]any) (known bool, err error)
}

// Gaps is what Check found: refusals (the job must not be
// registered) and warnings (it may, without those parts).
type Gaps struct {
	Refused  []string
	Warnings []string
}

// WarningsText formats the warnings as a response's Warnings field: "1
// warning:" or "N warnings:", a blank line, then one "* " line each. Empty
// when there are none.
func (g Gaps) WarningsText() string {
	switch len(g.Warnings) {
	case 0:
		return ""
	case 1:
		return "1 warning:\n\n* " + g.Warnings[0]
	}
	return fmt.Sprintf("%d warnings:\n\n* %s", len(g.Warnings), strings.Join(g.Warnings, "\n* "))
}

// gap is one line of the table: a block (as written in a jobspec) and
// whether and why it is refused or only warned about. used returns the
// labels of the instances a job sets (`template "local/app.conf"`), or none.
type gap[T any] struct {
	block  string
	refuse bool
	reason string
	used   func(T) []string
}

const (
	gapRefuse = true
	gapWarn   = false
)

type groupCtx struct {
	job *structs.Job
	tg  *structs.TaskGroup
}

type taskCtx struct {
	job *structs.Job
	tg  *structs.TaskGroup
	t   *structs.Task
}

var jobGaps = []gap[*structs.Job]{
	{"multiregion", gapRefuse, "the job would run in this region only", func(j *structs.Job) []string {
		return when(j.Multiregion != nil, "multiregion")
	}},
	{"consul_namespace", gapWarn, "Drover has no Consul integration", func(j *structs.Job) []string {
		return when(j.ConsulNamespace != "", "consul_namespace")
	}},
	{"vault_namespace", gapWarn, "Drover has no Vault integration", func(j *structs.Job) []string {
		return when(j.VaultNamespace != "", "vault_namespace")
	}},
}

var groupGaps = []gap[groupCtx]{
	{"csi volume", gapRefuse, "Drover has no CSI plugin support; only static host volumes (type = \"host\") are mounted, so the task would write its data to the alloc dir, where it is lost", func(c groupCtx) []string {
		var out []string
		for _, name := range sortedKeys(c.tg.Volumes) {
			if v := c.tg.Volumes[name]; v != nil && v.Type == "csi" {
				out = append(out, fmt.Sprintf("volume %q (type = \"csi\")", name))
			}
		}
		return out
	}},
	{"consul", gapRefuse, "Drover has no Consul integration; tasks would get no Consul token or configuration", func(c groupCtx) []string {
		return when(c.tg.Consul != nil, "consul")
	}},
	{"network mode", gapRefuse, "tasks would share the host's network instead of getting their own", func(c groupCtx) []string {
		var out []string
		for i, n := range c.tg.Networks {
			if n != nil && n.Mode != "" && n.Mode != "host" && n.Mode != "bridge" {
				out = append(out, fmt.Sprintf("network[%d] mode %q", i, n.Mode))
			}
		}
		return out
	}},
	{"host_network", gapRefuse, "the port would be bound on the node's default network, possibly a public one", func(c groupCtx) []string {
		var out []string
		for i, n := range c.tg.Networks {
			if n == nil {
				continue
			}
			for _, p := range append(append([]structs.Port{}, n.ReservedPorts...), n.DynamicPorts...) {
				if p.HostNetwork != "" && p.HostNetwork != "default" {
					out = append(out, fmt.Sprintf("network[%d] port %q host_network %q", i, p.Label, p.HostNetwork))
				}
			}
		}
		return out
	}},
	{"network options", gapWarn, "Drover's bridge networking does not apply them", func(c groupCtx) []string {
		var out []string
		for i, n := range c.tg.Networks {
			if n == nil {
				continue
			}
			for _, f := range []struct {
				name string
				set  bool
			}{{"hostname", n.Hostname != ""}, {"dns", n.DNS != nil}, {"cni", n.CNI != nil}} {
				if f.set {
					out = append(out, fmt.Sprintf("network[%d] %s", i, f.name))
				}
			}
		}
		return out
	}},
	{"network addressing", gapWarn, "Drover picks the node's address itself and does not account bandwidth", func(c groupCtx) []string {
		var out []string
		for i, n := range c.tg.Networks {
			if n == nil {
				continue
			}
			for _, f := range []struct {
				name string
				set  bool
			}{{"device", n.Device != ""}, {"cidr", n.CIDR != ""}, {"ip", n.IP != ""}, {"mbits", n.MBits > 0}} {
				if f.set {
					out = append(out, fmt.Sprintf("network[%d] %s", i, f.name))
				}
			}
		}
		return out
	}},
	{"ignore_collision", gapWarn, "the port is still checked for collisions on the node", func(c groupCtx) []string {
		var out []string
		for i, n := range c.tg.Networks {
			if n == nil {
				continue
			}
			for _, p := range append(append([]structs.Port{}, n.ReservedPorts...), n.DynamicPorts...) {
				if p.IgnoreCollision {
					out = append(out, fmt.Sprintf("network[%d] port %q ignore_collision", i, p.Label))
				}
			}
		}
		return out
	}},
}

var taskGaps = []gap[taskCtx]{
	{"bridge network driver", gapRefuse, "the task would not join the group's network namespace (only raw_exec, exec, java, qemu, docker and podman tasks do)", func(c taskCtx) []string {
		switch c.t.Driver {
		case "raw_exec", "exec", "java", "qemu", "docker", "podman":
			return nil
		}
		for _, n := range c.tg.Networks {
			if n != nil && n.Mode == "bridge" {
				return []string{fmt.Sprintf("driver %q in a bridge network", c.t.Driver)}
			}
		}
		return nil
	}},
	{"template Consul/Vault functions", gapRefuse, "Drover has no Consul or Vault integration, so the template could never render", func(c taskCtx) []string {
		var out []string
		for _, t := range c.t.Templates {
			if t == nil {
				continue
			}
			for _, fn := range foreignTemplateFuncs(t) {
				out = append(out, fmt.Sprintf("template %q function %q (%s)", ptrVal(t.DestPath), fn, template.ForeignFuncs[fn]))
			}
		}
		return out
	}},
	{"artifact source", gapRefuse, "Drover fetches artifacts over http, https, git and from local files only; the task would start without the files", func(c taskCtx) []string {
		return artifactGaps(c.t, "source scheme")
	}},
	{"artifact option", gapRefuse, "Drover clones with the client's own git and ssh configuration; give the client agent's user the key instead", func(c taskCtx) []string {
		return artifactGaps(c.t, "git option")
	}},
	{"artifact archive", gapRefuse, "Drover has no xz decompressor; use a .tar.gz, .tar.bz2 or .zip archive, or set archive = \"false\" to download it as it is", func(c taskCtx) []string {
		return artifactGaps(c.t, "archive type")
	}},
	{"vault", gapRefuse, "Drover has no Vault integration; the task would get no Vault token", func(c taskCtx) []string {
		return when(c.t.Vault != nil, "vault")
	}},
	{"consul", gapRefuse, "Drover has no Consul integration; the task would get no Consul token or configuration", func(c taskCtx) []string {
		return when(c.t.Consul != nil, "consul")
	}},
	{"secret", gapRefuse, "the task would start without its secrets", func(c taskCtx) []string {
		var out []string
		for _, s := range c.t.Secrets {
			if s != nil {
				out = append(out, fmt.Sprintf("secret %q", s.Name))
			}
		}
		return out
	}},
	{"csi_plugin", gapRefuse, "Drover has no CSI support; the plugin would never be registered", func(c taskCtx) []string {
		return when(c.t.CSIPluginConfig != nil, "csi_plugin")
	}},
	{"kind", gapRefuse, "Consul Connect tasks (proxies, gateways, native) are not built", func(c taskCtx) []string {
		return when(c.t.Kind != "", fmt.Sprintf("kind %q", c.t.Kind))
	}},
	{"schedule", gapRefuse, "the task would run all the time, not only in its schedule", func(c taskCtx) []string {
		return when(c.t.Schedule != nil, "schedule")
	}},
	{"user", gapRefuse, "this driver runs every task as the agent's user, so the task would run with more privileges than asked (docker, exec, java and raw_exec run the task as the user)", func(c taskCtx) []string {
		return when(c.t.User != "" && !honoursUser[c.t.Driver], fmt.Sprintf("user %q", c.t.User))
	}},
	{"identity filepath", gapRefuse, "identities are written only to secrets/nomad_token and secrets/nomad_<name>.jwt; the task would not find its token", func(c taskCtx) []string {
		var out []string
		for _, id := range identities(c.t) {
			if id.Filepath != "" {
				out = append(out, identityLabel(id)+" filepath")
			}
		}
		return out
	}},
	{"identity change_mode", gapWarn, "a renewed token is rewritten in place; the task is not signalled or restarted", func(c taskCtx) []string {
		var out []string
		for _, id := range identities(c.t) {
			if id.ChangeMode != "" && id.ChangeMode != "noop" {
				out = append(out, identityLabel(id)+" change_mode")
			}
		}
		return out
	}},
	{"identity claims", gapWarn, "extra_claims and service_name are not added to the token", func(c taskCtx) []string {
		var out []string
		for _, id := range identities(c.t) {
			if len(id.ExtraClaims) > 0 || id.ServiceName != "" {
				out = append(out, identityLabel(id)+" extra_claims/service_name")
			}
		}
		return out
	}},
	{"resources.numa", gapRefuse, "Drover does not place tasks by NUMA node", func(c taskCtx) []string {
		r := c.t.Resources
		return when(r != nil && r.NUMA != nil && r.NUMA.Affinity != "" && r.NUMA.Affinity != "none", "resources.numa")
	}},
	{"task network", gapRefuse, "task-level network asks are not placed, so the task would get no ports; declare the network in the group", func(c taskCtx) []string {
		return when(c.t.Resources != nil && len(c.t.Resources.Networks) > 0, "resources.network")
	}},
	{"resources.disk/iops/secrets", gapWarn, "it is not reserved on the node (for disk, use the group's ephemeral_disk)", func(c taskCtx) []string {
		r := c.t.Resources
		if r == nil {
			return nil
		}
		var out []string
		for _, f := range []struct {
			name string
			set  bool
		}{{"resources.disk", r.DiskMB > 0}, {"resources.iops", r.IOPS > 0}, {"resources.secrets", r.SecretsMB > 0}} {
			if f.set {
				out = append(out, f.name)
			}
		}
		return out
	}},
	{"scaling", gapWarn, "the policy is served at /v1/scaling/policies, but Drover has no recommendations API (Nomad Enterprise's dynamic application sizing), so no autoscaler can apply it", func(c taskCtx) []string {
		return when(len(c.t.ScalingPolicies) > 0, "scaling")
	}},
	{"action", gapWarn, "actions cannot be run: Drover has no action endpoint yet", func(c taskCtx) []string {
		var out []string
		for _, a := range c.t.Actions {
			if a != nil {
				out = append(out, fmt.Sprintf("action %q", a.Name))
			}
		}
		return out
	}},
}

// serviceGap says what happens to a service block (group or task level);
// an empty label: nothing (a Nomad-native service with http/tcp checks is
// registered and checked by the client).
func serviceGap(s *structs.Service) (label string, refused bool, reason string) {
	label = fmt.Sprintf("service %q", s.Name)
	if s.Connect != nil {
		return label + " connect", gapRefuse, "Consul Connect (sidecars, gateways, mesh) is not built; the service would be unreachable through the mesh"
	}
	if s.Provider == structs.ServiceProviderNomad {
		for _, c := range s.Checks {
			if c.Type != "http" && c.Type != "tcp" {
				return fmt.Sprintf("%s check %q of type %q", label, c.Name, c.Type), gapRefuse,
					"the nomad service provider runs only http and tcp checks"
			}
		}
		return "", false, ""
	}
	provider := s.Provider
	if provider == "" {
		provider = "consul" // Nomad's default
	}
	reason = fmt.Sprintf("Drover has no Consul integration, so it is not registered in Consul (provider %q)", provider)
	if len(s.Checks) > 0 {
		reason += ", and its checks do not run"
	}
	return label, gapWarn, reason
}

// Check walks a canonicalized job and reports every part of it that Drover
// would not act on, each message naming where it is:
//
//	Task group "web", task "server": template "local/app.conf" is not supported by Drover yet: ...
//
// drivers may be nil (then driver names and configs are not checked).
func Check(j *structs.Job, drivers DriverCatalog) Gaps {
	var g Gaps
	add := func(path, label string, refused bool, reason string) {
		if refused {
			g.Refused = append(g.Refused, fmt.Sprintf("%s: %s is not supported by Drover yet: %s", path, label, reason))
		} else {
			g.Warnings = append(g.Warnings, fmt.Sprintf("%s: %s is accepted but not acted on by Drover yet: %s", path, label, reason))
		}
	}
	jp := fmt.Sprintf("Job %q", j.ID)
	for _, r := range jobGaps {
		for _, l := range r.used(j) {
			add(jp, l, r.refuse, r.reason)
		}
	}
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		gp := fmt.Sprintf("Task group %q", tg.Name)
		for _, r := range groupGaps {
			for _, l := range r.used(groupCtx{j, tg}) {
				add(gp, l, r.refuse, r.reason)
			}
		}
		for _, s := range tg.Services {
			if s != nil {
				if l, rf, why := serviceGap(s); l != "" {
					add(gp, l, rf, why)
				}
			}
		}
		for _, t := range tg.Tasks {
			if t == nil {
				continue
			}
			tp := fmt.Sprintf("%s, task %q", gp, t.Name)
			for _, r := range taskGaps {
				for _, l := range r.used(taskCtx{j, tg, t}) {
					add(tp, l, r.refuse, r.reason)
				}
			}
			for _, s := range t.Services {
				if s != nil {
					if l, rf, why := serviceGap(s); l != "" {
						add(tp, l, rf, why)
					}
				}
			}
			if drivers == nil || t.Driver == "" {
				continue
			}
			switch known, err := drivers.CheckTaskConfig(t.Driver, t.Config); {
			case !known:
				g.Warnings = append(g.Warnings, fmt.Sprintf("%s: driver %q is not built into Drover, so no node can run this task (its config is not checked)", tp, t.Driver))
			case err != nil:
				g.Refused = append(g.Refused, fmt.Sprintf("%s: driver %q %s", tp, t.Driver, err))
			}
		}
	}
	return g
}

func when(cond bool, label string) []string {
	if cond {
		return []string{label}
	}
	return nil
}

func labels[V any](block string, m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %q", block, k))
	}
	return out
}

func identities(t *structs.Task) []*structs.WorkloadIdentity {
	var out []*structs.WorkloadIdentity
	if t.Identity != nil {
		out = append(out, t.Identity)
	}
	for _, id := range t.Identities {
		if id != nil {
			out = append(out, id)
		}
	}
	return out
}

func identityLabel(id *structs.WorkloadIdentity) string {
	if id.Name == "" {
		return "identity"
	}
	return fmt.Sprintf("identity %q", id.Name)
}

func ptrVal[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// honoursUser are the drivers that run a task as its `user`.
var honoursUser = map[string]bool{"docker": true, "podman": true, "exec": true, "java": true, "raw_exec": true}

// foreignTemplateFuncs lists the Consul and Vault functions (and plugin,
// writeToFile) an inline template calls, in order of first use. A template
// that does not parse is left to the client, whose error names the line.
func foreignTemplateFuncs(t *structs.Template) []string {
	body := ptrVal(t.EmbeddedTmpl)
	if body == "" {
		return nil
	}
	left, right := ptrVal(t.LeftDelim), ptrVal(t.RightDelim)
	tr := parse.New("t")
	tr.Mode = parse.SkipFuncCheck
	trees := map[string]*parse.Tree{}
	if _, err := tr.Parse(body, left, right, trees); err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		if n == nil || reflect.ValueOf(n).IsNil() {
			return
		}
		switch n := n.(type) {
		case *parse.IdentifierNode:
			if _, ok := template.ForeignFuncs[n.Ident]; ok && !seen[n.Ident] {
				seen[n.Ident] = true
				out = append(out, n.Ident)
			}
		case *parse.ListNode:
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			for _, c := range n.Cmds {
				walk(c)
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			walk(n.Pipe)
		}
	}
	for _, tree := range trees {
		walk(tree.Root)
	}
	return out
}

// artifactGaps labels the task's artifacts whose source Drover cannot
// fetch for the reason what ("source scheme": git, hg, s3, gcs...;
// "archive type": xz).
func artifactGaps(t *structs.Task, what string) []string {
	var out []string
	for _, a := range t.Artifacts {
		if a == nil {
			continue
		}
		var ue *getter.UnsupportedError
		if err := getter.CheckSource(ptrVal(a.GetterSource), a.GetterOptions); errors.As(err, &ue) && ue.What == what {
			out = append(out, fmt.Sprintf("artifact %q (%s %q)", ptrVal(a.GetterSource), ue.What, ue.Name))
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
