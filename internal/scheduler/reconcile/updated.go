package reconcile

import (
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// TasksUpdated reports whether moving the named group's allocations from
// oldJob to newJob needs new allocations (destructive) rather than an
// in-place update, and names the first difference found ("task \"web\"
// config changed"), which `job plan` shows.
//
// Destructive: anything the running tasks were started with or that shapes
// their sandbox. The number and names of tasks, the ephemeral disk, group
// networks (mode, mbits, hostname, DNS, CNI args, port labels/static
// values/to/host network; the value of a dynamic port is ignored), the
// group's consul block and its connect services, group volumes,
// restart.render_templates; per task: driver, user, config, env, artifacts,
// vault, secrets, consul, templates, CSI plugin config, volume mounts, meta
// merged from job, group and task (it reaches the task's environment), task
// networks, resources other than networks (cpu, cores, memory, memory_max,
// secrets size, devices, numa), identities and logs.disabled.
//
// In place, as in Nomad: count, the update, reschedule, migrate, restart
// (except render_templates) and disconnect blocks, priority, constraints,
// affinities and spreads (the scheduler re-checks the current node), services
// other than connect (tags, checks: the client re-registers them),
// kill_timeout, kill_signal, shutdown_delay, max_run_duration, scaling,
// lifecycle and log rotation sizes.
//
// nil and empty maps, slices and blocks are the same; numbers compare by
// value whatever their Go type (a task config decoded from JSON holds
// float64 where the same config from msgpack holds int64).
func TasksUpdated(oldJob, newJob *structs.Job, group string) (destructive bool, reason string) {
	a, b := oldJob.LookupTaskGroup(group), newJob.LookupTaskGroup(group)
	switch {
	case a == nil && b == nil:
		return false, ""
	case a == nil:
		return true, fmt.Sprintf("group %q added", group)
	case b == nil:
		return true, fmt.Sprintf("group %q removed", group)
	}
	if len(a.Tasks) != len(b.Tasks) {
		return true, fmt.Sprintf("number of tasks changed (%d to %d)", len(a.Tasks), len(b.Tasks))
	}
	for _, at := range a.Tasks {
		if b.LookupTask(at.Name) == nil {
			return true, fmt.Sprintf("task %q removed", at.Name)
		}
	}
	if !same(a.EphemeralDisk, b.EphemeralDisk) {
		return true, "ephemeral disk changed"
	}
	if what := networksChanged(a.Networks, b.Networks); what != "" {
		return true, "group network " + what + " changed"
	}
	if !same(a.Consul, b.Consul) {
		return true, "group consul changed"
	}
	if what := connectChanged(a.Services, b.Services); what != "" {
		return true, what
	}
	if !same(a.Volumes, b.Volumes) {
		return true, "group volumes changed"
	}
	if renderTemplates(a.RestartPolicy) != renderTemplates(b.RestartPolicy) {
		return true, "group restart render_templates changed"
	}
	for _, at := range a.Tasks {
		bt := b.LookupTask(at.Name)
		if what := taskChanged(oldJob, newJob, a, b, at, bt); what != "" {
			return true, fmt.Sprintf("task %q %s changed", at.Name, what)
		}
	}
	return false, ""
}

// taskChanged names the first destructive difference between two versions
// of one task, or returns "".
func taskChanged(oldJob, newJob *structs.Job, ag, bg *structs.TaskGroup, at, bt *structs.Task) string {
	switch {
	case at.Driver != bt.Driver:
		return "driver"
	case at.User != bt.User:
		return "user"
	case !same(at.Config, bt.Config):
		return "config"
	case !same(at.Env, bt.Env):
		return "env"
	case !same(at.Artifacts, bt.Artifacts):
		return "artifacts"
	case !same(at.Vault, bt.Vault):
		return "vault"
	case !same(at.Secrets, bt.Secrets):
		return "secrets"
	case !same(at.Consul, bt.Consul):
		return "consul"
	case !same(at.Templates, bt.Templates):
		return "templates"
	case renderTemplates(at.RestartPolicy) != renderTemplates(bt.RestartPolicy):
		return "restart render_templates"
	case !same(at.CSIPluginConfig, bt.CSIPluginConfig):
		return "csi_plugin"
	case !same(at.VolumeMounts, bt.VolumeMounts):
		return "volume mounts"
	case !same(combinedMeta(oldJob, ag, at), combinedMeta(newJob, bg, bt)):
		return "meta"
	}
	ar, br := at.Resources, bt.Resources
	if ar == nil {
		ar = &structs.Resources{}
	}
	if br == nil {
		br = &structs.Resources{}
	}
	if what := networksChanged(ar.Networks, br.Networks); what != "" {
		return "network " + what
	}
	switch {
	case ar.CPU != br.CPU:
		return "resources cpu"
	case ar.Cores != br.Cores:
		return "resources cores"
	case ar.MemoryMB != br.MemoryMB:
		return "resources memory"
	case ar.MemoryMaxMB != br.MemoryMaxMB:
		return "resources memory_max"
	case ar.SecretsMB != br.SecretsMB:
		return "resources secrets"
	case !same(ar.Devices, br.Devices):
		return "resources devices"
	case !same(ar.NUMA, br.NUMA):
		return "resources numa"
	case !same(at.Identity, bt.Identity) || !same(at.Identities, bt.Identities):
		return "identities"
	case logsDisabled(at.LogConfig) != logsDisabled(bt.LogConfig):
		return "logs disabled"
	}
	return ""
}

// combinedMeta is the meta a task sees: the job's, overridden by the
// group's, overridden by the task's. Moving a key between levels with the
// same value changes nothing the task can observe.
func combinedMeta(j *structs.Job, tg *structs.TaskGroup, t *structs.Task) map[string]string {
	out := make(map[string]string, len(j.Meta)+len(tg.Meta)+len(t.Meta))
	for _, m := range []map[string]string{j.Meta, tg.Meta, t.Meta} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func renderTemplates(p *structs.RestartPolicy) bool { return p != nil && p.RenderTemplates }

func logsDisabled(c *structs.LogConfig) bool { return c != nil && c.Disabled }

// networksChanged names what differs between two network asks (in order),
// or returns "". Dynamic ports compare by label, to and host network only:
// their values are chosen at placement.
func networksChanged(a, b []*structs.NetworkResource) string {
	if len(a) != len(b) {
		return "count"
	}
	for i := range a {
		an, bn := a[i], b[i]
		if an == nil {
			an = &structs.NetworkResource{}
		}
		if bn == nil {
			bn = &structs.NetworkResource{}
		}
		switch {
		case an.Mode != bn.Mode:
			return "mode"
		case an.MBits != bn.MBits:
			return "mbits"
		case an.Hostname != bn.Hostname:
			return "hostname"
		case !same(an.DNS, bn.DNS):
			return "dns"
		case !same(an.CNI, bn.CNI):
			return "cni"
		case !reflect.DeepEqual(portMap(an), portMap(bn)):
			return "ports"
		}
	}
	return ""
}

type portAsk struct {
	Static      bool
	Value       int
	To          int
	HostNetwork string
}

func portMap(n *structs.NetworkResource) map[string]portAsk {
	m := make(map[string]portAsk, len(n.ReservedPorts)+len(n.DynamicPorts))
	for _, p := range n.ReservedPorts {
		m[p.Label] = portAsk{Static: true, Value: p.Value, To: p.To, HostNetwork: p.HostNetwork}
	}
	for _, p := range n.DynamicPorts {
		m[p.Label] = portAsk{To: p.To, HostNetwork: p.HostNetwork}
	}
	return m
}

// connectChanged compares the group's Consul Connect services by name: a
// connect block added, removed or changed, or the port it fronts, needs a
// new sidecar. Other service changes are re-registered in place.
func connectChanged(a, b []*structs.Service) string {
	type ask struct {
		Connect any
		Port    string
	}
	collect := func(svcs []*structs.Service) map[string]ask {
		m := make(map[string]ask)
		for _, s := range svcs {
			if s != nil && s.Connect != nil {
				m[s.Name] = ask{Connect: s.Connect, Port: s.PortLabel}
			}
		}
		return m
	}
	am, bm := collect(a), collect(b)
	names := make([]string, 0, len(am)+len(bm))
	for n := range am {
		names = append(names, n)
	}
	for n := range bm {
		if _, ok := am[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		x, okA := am[n]
		y, okB := bm[n]
		switch {
		case !okA:
			return fmt.Sprintf("connect service %q added", n)
		case !okB:
			return fmt.Sprintf("connect service %q removed", n)
		case x.Port != y.Port:
			return fmt.Sprintf("connect service %q port changed", n)
		case !same(x.Connect, y.Connect):
			return fmt.Sprintf("connect service %q changed", n)
		}
	}
	return ""
}

// same is a deep equality for job spec values in which nil and empty maps,
// slices and blocks are equal, a missing map key equals an empty value, and
// numbers compare by value across int, uint and float types.
func same(a, b any) bool {
	return equalValues(reflect.ValueOf(a), reflect.ValueOf(b))
}

var timeType = reflect.TypeOf(time.Time{})

func equalValues(a, b reflect.Value) bool {
	a, b = indirect(a), indirect(b)
	if isEmpty(a) || isEmpty(b) {
		return isEmpty(a) && isEmpty(b)
	}
	if na, ok := number(a); ok {
		nb, ok := number(b)
		return ok && na == nb
	}
	switch {
	case a.Kind() == reflect.Map && b.Kind() == reflect.Map:
		ka, kb := mapByKey(a), mapByKey(b)
		for k, va := range ka {
			if !equalValues(va, kb[k]) {
				return false
			}
		}
		for k, vb := range kb {
			if _, ok := ka[k]; !ok && !isEmpty(indirect(vb)) {
				return false
			}
		}
		return true
	case isList(a) && isList(b):
		if a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !equalValues(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	if a.Type() == timeType {
		return a.Interface().(time.Time).Equal(b.Interface().(time.Time))
	}
	if a.Kind() == reflect.Struct {
		for i := 0; i < a.NumField(); i++ {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if !equalValues(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	if a.Comparable() {
		return a.Equal(b)
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// indirect follows pointers and interfaces; nil ones become the invalid
// Value (empty).
func indirect(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// isEmpty: absent, a nil pointer, an empty map or slice, or a struct whose
// exported fields are all empty (a block written with nothing in it).
// Scalars are never empty: "" and 0 are values a user may set.
func isEmpty(v reflect.Value) bool {
	v = indirect(v)
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Map, reflect.Slice:
		return v.Len() == 0
	case reflect.Struct:
		if v.Type() == timeType {
			return v.Interface().(time.Time).IsZero()
		}
		for i := 0; i < v.NumField(); i++ {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			f := v.Field(i)
			if k := indirect(f); k.IsValid() && !isEmpty(k) && !(isScalar(k) && k.IsZero()) {
				return false
			}
		}
		return true
	}
	return false
}

func isScalar(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
		return false
	}
	return true
}

func isList(v reflect.Value) bool {
	return v.Kind() == reflect.Slice || v.Kind() == reflect.Array
}

// number returns v as a comparable numeric key. Integers are kept exact;
// floats with an integral value compare equal to the same integer.
func number(v reflect.Value) (any, bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			return nil, false
		}
		return numKey(float64(v.Int()), v.Int(), true), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := v.Uint()
		if u > 1<<63-1 {
			return fmt.Sprintf("u%d", u), true
		}
		return numKey(float64(u), int64(u), true), true
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if f == float64(int64(f)) {
			return numKey(f, int64(f), true), true
		}
		return numKey(f, 0, false), true
	}
	return nil, false
}

type numeric struct {
	i     int64
	f     float64
	exact bool
}

func numKey(f float64, i int64, exact bool) numeric {
	if exact {
		return numeric{i: i, exact: true}
	}
	return numeric{f: f}
}

func mapByKey(m reflect.Value) map[string]reflect.Value {
	out := make(map[string]reflect.Value, m.Len())
	it := m.MapRange()
	for it.Next() {
		out[fmt.Sprint(it.Key().Interface())] = it.Value()
	}
	return out
}
