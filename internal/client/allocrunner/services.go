package allocrunner

import (
	"net"
	"strconv"
	"sync"
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

// ownerState is the state of a service's owner: whether its task runs,
// and how often it was restarted (which names its run).
func (ar *AllocRunner) ownerState(owner string) (running bool, restarts uint64) {
	for _, e := range ar.tasks {
		if e.tr.Task().Name == owner {
			st := e.tr.State()
			return st.State == structs.TaskStateRunning, st.Restarts
		}
	}
	return false, 0
}

// ownerWanted reports (under svc.mu) whether the owner's services should
// be registered: a group service (owner "") always while the allocation
// runs; a task's while its task runs, except during the run that is being
// stopped for an in-place restart (pauseServices), which ends when the
// task's restart count moves on.
func (ar *AllocRunner) ownerWanted(owner string) bool {
	if owner == "" {
		return true
	}
	running, restarts := ar.ownerState(owner)
	if r, ok := ar.svc.restarting[owner]; ok {
		if r == restarts {
			return false
		}
		delete(ar.svc.restarting, owner) // the next run
	}
	return running
}

// runServices keeps the servers' registrations of this allocation equal to
// its running services, and runs their checks, until the allocation ends;
// then it removes every registration left. A killed allocation loses its
// services before its tasks are signalled: the group's in the group's
// pre-kill step, each task's in that task's (dropServices). A detached
// runner (the client shuts down, the tasks keep running) leaves them
// registered.
func (ar *AllocRunner) runServices() {
	defer close(ar.svc.done)
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	defer ar.checks.stopAll()
	killCh := ar.killCh
	for {
		if ar.detached() {
			// The client shuts down and leaves the tasks running: their
			// services stay registered for the next client to take over.
			return
		}
		if isClosed(killCh) {
			killCh = nil // seen: its pre-kill steps drive the rest
		}
		more, failed := ar.syncServices()
		if !more {
			return
		}
		if failed {
			retry.Reset(time.Second)
		}
		select {
		case <-ar.svc.poke:
		case <-killCh:
		case <-ar.waitCh:
		case <-ar.detachCh:
		case <-retry.C:
		}
	}
}

// syncServices makes one pass of the service loop: more is false once the
// allocation ended and its registrations are gone; failed asks for a retry.
func (ar *AllocRunner) syncServices() (more, failed bool) {
	sl := ar.svc
	sl.mu.Lock()
	defer sl.mu.Unlock()
	reg := ar.cfg.Services
	ar.mu.Lock()
	a := ar.alloc
	ar.mu.Unlock()
	ended := isClosed(ar.waitCh)
	// A killed allocation registers nothing new; what it has stays until
	// its owner's pre-kill step.
	killing := isClosed(ar.killCh) || a.ServerTerminalStatus()
	want := map[string]*registered{}
	var defs []serviceDef
	if !ended {
		for _, d := range nomadServices(a) {
			if sl.gone[d.owner] || !ar.ownerWanted(d.owner) {
				continue
			}
			r := registration(a, ar.cfg.Node, ar.cfg.Region, d)
			if _, ok := sl.registered[r.ID]; killing && !ok {
				continue
			}
			want[r.ID] = &registered{reg: r, owner: d.owner}
			defs = append(defs, d)
		}
	}
	ar.checks.sync(a, defs)
	ar.checks.persist() // checks that stopped leave the stored results
	sl.failed = false
	if ended {
		// One sweep of everything the allocation may still hold (a
		// deregistration that failed earlier).
		if reg != nil {
			if err := reg.DeleteAllocServices(a.NodeID, a.ID); err != nil {
				ar.logger.Warn("failed to deregister services", "error", err)
			}
		}
		sl.registered = map[string]*registered{}
		return false, false
	}
	var up []*structs.ServiceRegistration
	for id, w := range want {
		if old, ok := sl.registered[id]; !ok || !sameReg(old.reg, w.reg) {
			up = append(up, w.reg)
		}
	}
	if len(up) > 0 && reg != nil {
		if err := reg.UpsertServices(up); err != nil {
			ar.logger.Warn("failed to register services", "error", err)
			sl.failed = true
		} else {
			for _, r := range up {
				sl.registered[r.ID] = want[r.ID]
			}
		}
	}
	for id := range sl.registered {
		if _, ok := want[id]; !ok {
			ar.deregisterLocked(id)
		}
	}
	return true, sl.failed
}

// deregisterLocked removes one registration (under svc.mu); a failure is
// retried by the loop.
func (ar *AllocRunner) deregisterLocked(id string) {
	sl := ar.svc
	r := sl.registered[id]
	if reg := ar.cfg.Services; reg != nil {
		if err := reg.DeleteService(r.reg.Namespace, id); err != nil && !isNotFoundErr(err) {
			ar.logger.Warn("failed to deregister service", "service_id", id, "error", err)
			sl.failed = true
			return
		}
	}
	delete(sl.registered, id)
}

// dropServices deregisters the services of owner (a task, or "" for the
// group's) now, and keeps them from being registered again: the pre-kill
// step before a shutdown_delay and the kill signal. It returns once the
// servers answered (a failed deregistration is retried by the loop, as
// Nomad goes on with the kill).
func (ar *AllocRunner) dropServices(owner string) {
	sl := ar.svc
	if sl == nil {
		return
	}
	sl.mu.Lock()
	sl.gone[owner] = true
	for id, r := range sl.registered {
		if r.owner == owner {
			ar.deregisterLocked(id)
		}
	}
	sl.mu.Unlock()
	ar.pokeServices() // stop the owner's checks
}

// pauseServices deregisters the services of task owner, which is about to
// be stopped for an in-place restart, and keeps them unregistered until
// its next run (Nomad's restart: services deregistered, task killed and
// started again, services registered once it runs). It returns once the
// servers answered, as dropServices does.
func (ar *AllocRunner) pauseServices(owner string) {
	sl := ar.svc
	if sl == nil || owner == "" {
		return
	}
	_, restarts := ar.ownerState(owner)
	sl.mu.Lock()
	sl.restarting[owner] = restarts
	for id, r := range sl.registered {
		if r.owner == owner {
			ar.deregisterLocked(id)
		}
	}
	sl.mu.Unlock()
	ar.pokeServices() // stop the owner's checks until it runs again
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

	// mu serialises the loop's passes with the pre-kill steps.
	mu         sync.Mutex
	registered map[string]*registered // by registration ID
	gone       map[string]bool        // owners whose services were dropped
	// restarting holds the tasks stopped for an in-place restart: the
	// restart count of the run being stopped, whose services stay away.
	restarting map[string]uint64
	failed     bool // the last pass must be retried
}

func newServiceLoop() *serviceLoop {
	return &serviceLoop{poke: make(chan struct{}, 1), done: make(chan struct{}),
		registered: map[string]*registered{}, gone: map[string]bool{}, restarting: map[string]uint64{}}
}

// registered is a registration the servers hold, and the owner it goes
// with.
type registered struct {
	reg   *structs.ServiceRegistration
	owner string
}

// hostPort joins a check target.
func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
