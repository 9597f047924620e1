package allocrunner

import (
	"net"
	"strconv"
	"time"

	"github.com/drover-project/drover/internal/client/taskenv"
	"github.com/drover-project/drover/internal/structs"
)

// ServiceRegistrar writes the allocation's Nomad-native service
// registrations to the servers (the client's RPCs). Calls may block on the
// network; the runner makes them from its own goroutine.
type ServiceRegistrar interface {
	UpsertServices(regs []*structs.ServiceRegistration) error
	DeleteService(namespace, id string) error
	DeleteAllocServices(nodeID, allocID string) error
}

// serviceDef is one `service { provider = "nomad" }` block of the
// allocation: owner is the task that must run for it to be registered (""
// for a group service, registered for the allocation's whole run as
// Nomad does).
type serviceDef struct {
	svc   *structs.Service
	owner string // task name; "" for a group service
	// task is the task a group service names (its checks' task).
	task string
	// name is the group or task name in the registration ID.
	name string
}

// nomadServices lists the group's and its tasks' nomad-provider services.
func nomadServices(a *structs.Allocation) []serviceDef {
	if a == nil || a.Job == nil {
		return nil
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return nil
	}
	var out []serviceDef
	for _, s := range tg.Services {
		if s != nil && s.Provider == structs.ServiceProviderNomad {
			out = append(out, serviceDef{svc: s, task: s.TaskName, name: tg.Name})
		}
	}
	for _, t := range tg.Tasks {
		for _, s := range t.Services {
			if s != nil && s.Provider == structs.ServiceProviderNomad {
				out = append(out, serviceDef{svc: s, owner: t.Name, task: t.Name, name: t.Name})
			}
		}
	}
	return out
}

// serviceAddress resolves where a service (or a check's port) is
// reachable: the allocation's port of that label (its host address and
// port; its mapped `to` port under address_mode "driver" or "alloc"), a
// numeric port on the node's address, or the node's address without a
// port. A service's own `address` wins.
func serviceAddress(a *structs.Allocation, node *structs.Node, portLabel, addressMode, address string) (string, int) {
	host := ""
	if node != nil {
		host = node.Attributes["unique.network.ip-address"]
	}
	port := 0
	if m, ok := allocPort(a, portLabel); ok {
		if m.HostIP != "" {
			host = m.HostIP
		}
		port = m.Value
		if (addressMode == "driver" || addressMode == "alloc") && m.To > 0 {
			port = m.To
		}
	} else if n, err := strconv.Atoi(portLabel); err == nil {
		port = n
	}
	if address != "" {
		host = address
	}
	return host, port
}

func allocPort(a *structs.Allocation, label string) (structs.AllocatedPortMapping, bool) {
	if label == "" || a.AllocatedResources == nil {
		return structs.AllocatedPortMapping{}, false
	}
	if m, ok := a.AllocatedResources.Shared.Ports.Get(label); ok {
		return m, true
	}
	// Legacy task-level networks.
	nets := append([]*structs.NetworkResource(nil), a.AllocatedResources.Shared.Networks...)
	for _, t := range a.AllocatedResources.Tasks {
		if t != nil {
			nets = append(nets, t.Networks...)
		}
	}
	for _, n := range nets {
		if n == nil {
			continue
		}
		for _, p := range append(append([]structs.Port(nil), n.ReservedPorts...), n.DynamicPorts...) {
			if p.Label == label {
				return structs.AllocatedPortMapping{Label: label, Value: p.Value, To: p.To, HostIP: n.IP}, true
			}
		}
	}
	return structs.AllocatedPortMapping{}, false
}

// registration builds the registration of one service of the allocation.
// Its name, tags and address are interpolated (${NOMAD_JOB_NAME},
// ${node.datacenter}, ${meta.x}, ...) against its task's environment, or
// the group's for a group service.
func registration(a *structs.Allocation, node *structs.Node, region string, d serviceDef) *structs.ServiceRegistration {
	var task *structs.Task
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && d.owner != "" {
		for _, t := range tg.Tasks {
			if t.Name == d.owner {
				task = t
			}
		}
	}
	env := taskenv.New(taskenv.Input{Alloc: a, Task: task, Node: node, Region: region})
	name := env.Interpolate(d.svc.Name)
	tags := make([]string, 0, len(d.svc.Tags))
	for _, t := range d.svc.Tags {
		tags = append(tags, env.Interpolate(t))
	}
	host, port := serviceAddress(a, node, d.svc.PortLabel, d.svc.AddressMode, env.Interpolate(d.svc.Address))
	r := &structs.ServiceRegistration{
		ID:          structs.ServiceRegistrationID(a.ID, d.name, name, d.svc.PortLabel),
		ServiceName: name,
		Namespace:   a.Namespace,
		NodeID:      a.NodeID,
		JobID:       a.JobID,
		AllocID:     a.ID,
		Tags:        tags,
		Address:     host,
		Port:        port,
	}
	if r.Namespace == "" {
		r.Namespace = structs.DefaultNamespace
	}
	if node != nil {
		r.Datacenter = node.Datacenter
	}
	if a.DeploymentStatus != nil && a.DeploymentStatus.Canary && len(d.svc.CanaryTags) > 0 {
		r.Tags = r.Tags[:0]
		for _, t := range d.svc.CanaryTags {
			r.Tags = append(r.Tags, env.Interpolate(t))
		}
	}
	return r
}

// ownerRunning reports whether the service's owner runs: its task; a
// group service (owner "") is always wanted while the allocation runs.
func (ar *AllocRunner) ownerRunning(owner string) bool {
	if owner == "" {
		return true
	}
	for _, e := range ar.tasks {
		if e.tr.Task().Name == owner {
			return e.tr.State().State == structs.TaskStateRunning
		}
	}
	return false
}

// runServices keeps the servers' registrations of this allocation equal to
// its running services, and runs their checks, until the allocation is
// killed or ends; then it removes every registration (before the tasks
// are stopped when it is killed). A detached runner (the client shuts down,
// the tasks keep running) leaves them registered.
func (ar *AllocRunner) runServices() {
	defer close(ar.svc.done)
	reg := ar.cfg.Services
	registered := map[string]*structs.ServiceRegistration{}
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	defer ar.checks.stopAll()
	for {
		if ar.detached() {
			// The client shuts down and leaves the tasks running: their
			// services stay registered for the next client to take over.
			return
		}
		ar.mu.Lock()
		a := ar.alloc
		ar.mu.Unlock()
		stopping := isClosed(ar.killCh) || isClosed(ar.waitCh) || a.ServerTerminalStatus()
		want := map[string]*structs.ServiceRegistration{}
		var defs []serviceDef
		if !stopping {
			for _, d := range nomadServices(a) {
				if ar.ownerRunning(d.owner) {
					r := registration(a, ar.cfg.Node, ar.cfg.Region, d)
					want[r.ID] = r
					defs = append(defs, d)
				}
			}
		}
		ar.checks.sync(a, defs)
		failed := false
		if stopping {
			if len(registered) > 0 && reg != nil {
				if err := reg.DeleteAllocServices(a.NodeID, a.ID); err != nil {
					ar.logger.Warn("failed to deregister services", "error", err)
				}
			}
			return
		}
		var up []*structs.ServiceRegistration
		for id, r := range want {
			if old, ok := registered[id]; !ok || !sameReg(old, r) {
				up = append(up, r)
			}
		}
		if len(up) > 0 && reg != nil {
			if err := reg.UpsertServices(up); err != nil {
				ar.logger.Warn("failed to register services", "error", err)
				failed = true
			} else {
				for _, r := range up {
					registered[r.ID] = r
				}
			}
		}
		for id, r := range registered {
			if _, ok := want[id]; ok {
				continue
			}
			if reg != nil {
				if err := reg.DeleteService(r.Namespace, id); err != nil && !isNotFoundErr(err) {
					ar.logger.Warn("failed to deregister service", "service_id", id, "error", err)
					failed = true
					continue
				}
			}
			delete(registered, id)
		}
		if failed {
			retry.Reset(time.Second)
		}
		select {
		case <-ar.svc.poke:
		case <-ar.killCh:
		case <-ar.waitCh:
		case <-ar.detachCh:
		case <-retry.C:
		}
	}
}

func sameReg(a, b *structs.ServiceRegistration) bool {
	if a.Address != b.Address || a.Port != b.Port || a.ServiceName != b.ServiceName || len(a.Tags) != len(b.Tags) {
		return false
	}
	for i := range a.Tags {
		if a.Tags[i] != b.Tags[i] {
			return false
		}
	}
	return true
}

func isNotFoundErr(err error) bool {
	code, _ := structs.ErrorCode(err)
	return code == 404
}

// pokeServices wakes the service loop (a task changed, a new copy).
func (ar *AllocRunner) pokeServices() {
	if ar.svc == nil {
		return
	}
	select {
	case ar.svc.poke <- struct{}{}:
	default:
	}
}

// serviceLoop is the runner's service state.
type serviceLoop struct {
	poke chan struct{}
	done chan struct{}
}

// hostPort joins a check target.
func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
