package taskenv

import (
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/structs"
)

// DefaultPath is used when neither the task nor the agent has a PATH.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Input is everything the environment is built from.
type Input struct {
	Alloc  *structs.Allocation
	Task   *structs.Task
	Node   *structs.Node
	Region string
	// AllocDir is <alloc_dir>/<allocID>; TaskDir is <AllocDir>/<task>.
	AllocDir string
	TaskDir  string
}

// Env is a built task environment and the interpolation context.
type Env struct {
	vars map[string]string // final task environment
	node map[string]string // node.*, attr.*, meta.* interpolation keys
}

// Build returns the task's environment.
func Build(in Input) map[string]string { return New(in).Map() }

// New builds the environment and interpolation context.
func New(in Input) *Env {
	e := &Env{vars: map[string]string{}, node: map[string]string{}}
	e.buildNode(in)
	e.buildNomad(in)
	// Task env: interpolated against the NOMAD_* variables and node keys,
	// never against each other (no order dependence), then added.
	if in.Task != nil {
		base := e.vars
		e.vars = copyMap(base)
		for k, v := range in.Task.Env {
			e.vars[k] = interpolate(v, base, e.node)
		}
	}
	if _, ok := e.vars["PATH"]; !ok {
		p := os.Getenv("PATH")
		if p == "" {
			p = DefaultPath
		}
		e.vars["PATH"] = p
	}
	return e
}

// With returns a copy of e whose environment also holds vars (they win):
// what the task runner adds after Build (template env = true, workload
// identities with env = true, devices) is interpolated in the driver
// config as it is set in the task.
func (e *Env) With(vars map[string]string) *Env {
	c := &Env{vars: copyMap(e.vars), node: e.node}
	for k, v := range vars {
		c.vars[k] = v
	}
	return c
}

// Map returns a copy of the environment.
func (e *Env) Map() map[string]string { return copyMap(e.vars) }

// Interpolate replaces the ${...} references it knows in s.
func (e *Env) Interpolate(s string) string { return interpolate(s, e.vars, e.node) }

// InterpolateConfig returns a copy of a driver config with every string
// (in nested maps and lists too) interpolated.
func (e *Env) InterpolateConfig(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = e.interpolateAny(v)
	}
	return out
}

func (e *Env) interpolateAny(v any) any {
	switch x := v.(type) {
	case string:
		return e.Interpolate(x)
	case map[string]any:
		return e.InterpolateConfig(x)
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, s := range x {
			out[k] = e.Interpolate(s)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = e.interpolateAny(y)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = e.Interpolate(s)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, y := range x {
			out[i] = e.InterpolateConfig(y)
		}
		return out
	default:
		return v
	}
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (e *Env) buildNode(in Input) {
	e.node["node.region"] = in.Region
	n := in.Node
	if n == nil {
		return
	}
	e.node["node.unique.id"] = n.ID
	e.node["node.datacenter"] = n.Datacenter
	e.node["node.unique.name"] = n.Name
	e.node["node.class"] = n.NodeClass
	e.node["node.pool"] = n.NodePool
	for k, v := range n.Attributes {
		e.node["attr."+k] = v
	}
	for k, v := range n.Meta {
		e.node["meta."+k] = v
	}
}

func (e *Env) buildNomad(in Input) {
	v := e.vars
	if in.Task != nil {
		v["NOMAD_TASK_NAME"] = in.Task.Name
	}
	if in.AllocDir != "" {
		v["NOMAD_ALLOC_DIR"] = in.AllocDir + "/alloc"
	}
	if in.TaskDir != "" {
		v["NOMAD_TASK_DIR"] = in.TaskDir + "/local"
		v["NOMAD_SECRETS_DIR"] = in.TaskDir + "/secrets"
	}
	if in.Region != "" {
		v["NOMAD_REGION"] = in.Region
	}
	if in.Node != nil {
		v["NOMAD_DC"] = in.Node.Datacenter
	}
	a := in.Alloc
	if a == nil {
		return
	}
	v["NOMAD_ALLOC_ID"] = a.ID
	if len(a.ID) >= 8 {
		v["NOMAD_SHORT_ALLOC_ID"] = a.ID[:8]
	} else {
		v["NOMAD_SHORT_ALLOC_ID"] = a.ID
	}
	v["NOMAD_ALLOC_NAME"] = a.Name
	v["NOMAD_ALLOC_INDEX"] = strconv.FormatUint(uint64(a.Index()), 10)
	v["NOMAD_GROUP_NAME"] = a.TaskGroup
	v["NOMAD_NAMESPACE"] = a.Namespace
	v["NOMAD_JOB_ID"] = a.JobID

	meta := map[string]string{}
	if j := a.Job; j != nil {
		v["NOMAD_JOB_NAME"] = j.Name
		v["NOMAD_JOB_PARENT_ID"] = j.ParentID
		if a.Namespace == "" {
			v["NOMAD_NAMESPACE"] = j.Namespace
		}
		if in.Region == "" && j.Region != "" {
			v["NOMAD_REGION"] = j.Region
		}
		for k, x := range j.Meta {
			meta[k] = x
		}
		for _, g := range j.TaskGroups {
			if g != nil && g.Name == a.TaskGroup {
				for k, x := range g.Meta {
					meta[k] = x
				}
			}
		}
	}
	if in.Task != nil {
		for k, x := range in.Task.Meta {
			meta[k] = x
		}
	}
	for k, x := range meta {
		v["NOMAD_META_"+k] = x
		v["NOMAD_META_"+strings.ToUpper(k)] = x
	}

	e.buildResources(in)
	if ar := a.AllocatedResources; ar != nil {
		for _, p := range ar.Shared.Ports {
			buildPort(v, p)
			if ns := a.NetworkStatus; ns != nil && ns.Address != "" {
				buildAllocAddr(v, p, ns)
			}
		}
	}
}

// buildAllocAddr sets the variables of a port inside the allocation's own
// network (bridge mode): its address and interface there, as Nomad does.
func buildAllocAddr(v map[string]string, p structs.AllocatedPortMapping, ns *structs.AllocNetworkStatus) {
	port := p.Value
	if p.To > 0 {
		port = p.To
	}
	l := p.Label
	v["NOMAD_ALLOC_IP_"+l] = ns.Address
	v["NOMAD_ALLOC_ADDR_"+l] = net.JoinHostPort(ns.Address, strconv.Itoa(port))
	if ns.InterfaceName != "" {
		v["NOMAD_ALLOC_INTERFACE_"+l] = ns.InterfaceName
	}
}

func (e *Env) buildResources(in Input) {
	v := e.vars
	var mem, memMax, cpu int64
	var cores []uint16
	found := false
	if ar := in.Alloc.AllocatedResources; ar != nil && in.Task != nil {
		if tr := ar.Tasks[in.Task.Name]; tr != nil {
			found = true
			mem, memMax, cpu = tr.Memory.MemoryMB, tr.Memory.MemoryMaxMB, tr.Cpu.CpuShares
			cores = tr.Cpu.ReservedCores
		}
	}
	if !found && in.Task != nil && in.Task.Resources != nil {
		r := in.Task.Resources
		mem, memMax, cpu = int64(r.MemoryMB), int64(r.MemoryMaxMB), int64(r.CPU)
	}
	if !found && (in.Task == nil || in.Task.Resources == nil) {
		return
	}
	v["NOMAD_MEMORY_LIMIT"] = strconv.FormatInt(mem, 10)
	if memMax > 0 {
		v["NOMAD_MEMORY_MAX_LIMIT"] = strconv.FormatInt(memMax, 10)
	}
	v["NOMAD_CPU_LIMIT"] = strconv.FormatInt(cpu, 10)
	if len(cores) > 0 {
		c := append([]uint16(nil), cores...)
		sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
		s := make([]string, len(c))
		for i, x := range c {
			s[i] = strconv.Itoa(int(x))
		}
		v["NOMAD_CPU_CORES"] = strings.Join(s, ",")
	}
}

// buildPort sets the variables of one group port. NOMAD_PORT_ and
// NOMAD_ALLOC_PORT_ are the port the task binds (to, when mapped); the
// HOST_ and ADDR_ variables are what is reachable on the host.
func buildPort(v map[string]string, p structs.AllocatedPortMapping) {
	host := strconv.Itoa(p.Value)
	port := host
	if p.To > 0 {
		port = strconv.Itoa(p.To)
	}
	l := p.Label
	v["NOMAD_PORT_"+l] = port
	v["NOMAD_ALLOC_PORT_"+l] = port
	v["NOMAD_HOST_PORT_"+l] = host
	v["NOMAD_IP_"+l] = p.HostIP
	v["NOMAD_HOST_IP_"+l] = p.HostIP
	v["NOMAD_ADDR_"+l] = net.JoinHostPort(p.HostIP, host)
	v["NOMAD_HOST_ADDR_"+l] = net.JoinHostPort(p.HostIP, host)
}

// interpolate replaces ${key} for keys found in vars (env names, also as
// env["KEY"]) or node (node.*, attr.*, meta.*). Unknown keys stay as text.
func interpolate(s string, vars, node map[string]string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		key := strings.TrimSpace(s[i+2 : i+2+j])
		b.WriteString(s[:i])
		if val, ok := lookup(key, vars, node); ok {
			b.WriteString(val)
		} else {
			b.WriteString(s[i : i+3+j])
		}
		s = s[i+3+j:]
	}
}

func lookup(key string, vars, node map[string]string) (string, bool) {
	if strings.HasPrefix(key, "env[") && strings.HasSuffix(key, "]") {
		name := strings.Trim(strings.TrimSpace(key[4:len(key)-1]), `"`)
		val, ok := vars[name]
		return val, ok
	}
	if val, ok := node[key]; ok {
		return val, true
	}
	val, ok := vars[key]
	return val, ok
}
