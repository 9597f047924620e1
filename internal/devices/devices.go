// Package devices is the device plugin contract of the client: a plugin
// reports the device groups of its node (vendor/type/name, instances,
// attributes) and, for a task granted some instances, says what the task
// needs to use them (environment, mounts, device nodes).
//
// A plugin must never decide placement (the scheduler picks instance IDs)
// and never talk to the servers; the client merges its fingerprint into
// the node and calls Reserve from the task runner.
package devices

import (
	"fmt"

	"github.com/drover-project/drover/internal/structs"
)

// Plugin is a device plugin.
type Plugin interface {
	// Name is the plugin's name as in `plugin "<name>"`.
	Name() string
	// Fingerprint returns the device groups the plugin sees now.
	Fingerprint() []*structs.NodeDeviceResource
	// Reserve prepares the given instance IDs (all from groups this
	// plugin fingerprinted) for a task.
	Reserve(ids []string) (*Reservation, error)
}

// Reservation is what a task needs to use reserved devices.
type Reservation struct {
	Envs    map[string]string
	Mounts  []Mount
	Devices []DeviceNode
}

// Mount is a host path made visible to the task.
type Mount struct {
	TaskPath, HostPath string
	ReadOnly           bool
}

// DeviceNode is a host device node made available to the task.
type DeviceNode struct {
	TaskPath, HostPath, CgroupPerms string
}

// Manager routes the granted devices of a task to the plugins that own
// them.
type Manager struct {
	plugins []Plugin
}

// NewManager returns a manager over plugins.
func NewManager(plugins ...Plugin) *Manager { return &Manager{plugins: plugins} }

// Fingerprint returns the device groups of every plugin.
func (m *Manager) Fingerprint() []*structs.NodeDeviceResource {
	if m == nil {
		return nil
	}
	var out []*structs.NodeDeviceResource
	for _, p := range m.plugins {
		out = append(out, p.Fingerprint()...)
	}
	return out
}

// owner returns the plugin whose fingerprint holds the group.
func (m *Manager) owner(d *structs.AllocatedDeviceResource) Plugin {
	for _, p := range m.plugins {
		for _, g := range p.Fingerprint() {
			if g.Vendor == d.Vendor && g.Type == d.Type && g.Name == d.Name {
				return p
			}
		}
	}
	return nil
}

// Reserve reserves every granted device of a task and merges the
// reservations. A grant no plugin owns is an error: the task must not run
// believing it has a device it cannot use.
func (m *Manager) Reserve(granted []*structs.AllocatedDeviceResource) (*Reservation, error) {
	out := &Reservation{Envs: map[string]string{}}
	for _, d := range granted {
		if d == nil || len(d.DeviceIDs) == 0 {
			continue
		}
		var p Plugin
		if m != nil {
			p = m.owner(d)
		}
		if p == nil {
			return nil, fmt.Errorf("no device plugin provides %s", structs.DeviceKey(d.Vendor, d.Type, d.Name))
		}
		r, err := p.Reserve(d.DeviceIDs)
		if err != nil {
			return nil, fmt.Errorf("device plugin %s: %w", p.Name(), err)
		}
		if r == nil {
			continue
		}
		for k, v := range r.Envs {
			out.Envs[k] = v
		}
		out.Mounts = append(out.Mounts, r.Mounts...)
		out.Devices = append(out.Devices, r.Devices...)
	}
	return out, nil
}
