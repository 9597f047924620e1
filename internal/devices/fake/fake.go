// Package fake is a device plugin without hardware, for tests and demos:
// it reports Count healthy instances of one configured device group and
// reserves them by setting FAKE_VISIBLE_DEVICES (the way GPU plugins set
// NVIDIA_VISIBLE_DEVICES). It must never touch the host.
package fake

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/devices"
	"github.com/drover-project/drover/internal/structs"
)

// PluginName is the name in `plugin "fake_device" { config { ... } }`.
const PluginName = "fake_device"

// EnvVisibleDevices lists the reserved instance IDs, comma-separated.
const EnvVisibleDevices = "FAKE_VISIBLE_DEVICES"

// Config configures the fake device group.
type Config struct {
	Vendor, Type, Name string
	Count              int
	// Attributes are literals such as "8 GiB", parsed for units.
	Attributes map[string]string
}

// Plugin is the fake device plugin.
type Plugin struct {
	cfg Config
	ids []string
}

// New returns a plugin with instances "<name>-0" … "<name>-<count-1>"
// (defaults: drover/gpu/fake-1, one instance).
func New(cfg Config) *Plugin {
	if cfg.Vendor == "" {
		cfg.Vendor = "drover"
	}
	if cfg.Type == "" {
		cfg.Type = "gpu"
	}
	if cfg.Name == "" {
		cfg.Name = "fake-1"
	}
	if cfg.Count <= 0 {
		cfg.Count = 1
	}
	p := &Plugin{cfg: cfg}
	for i := 0; i < cfg.Count; i++ {
		p.ids = append(p.ids, fmt.Sprintf("%s-%d", cfg.Name, i))
	}
	return p
}

// FromConfig reads the agent's `plugin "fake_device" { config { vendor,
// type, name, count, attributes } }`.
func FromConfig(m map[string]any) (*Plugin, error) {
	var cfg Config
	for k, v := range m {
		switch k {
		case "vendor":
			cfg.Vendor = fmt.Sprint(v)
		case "type":
			cfg.Type = fmt.Sprint(v)
		case "name":
			cfg.Name = fmt.Sprint(v)
		case "count":
			n, err := strconv.Atoi(fmt.Sprint(v))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("plugin %q: count must be a positive integer, got %v", PluginName, v)
			}
			cfg.Count = n
		case "attributes":
			attrs, err := stringMap(v)
			if err != nil {
				return nil, fmt.Errorf("plugin %q: attributes: %w", PluginName, err)
			}
			cfg.Attributes = attrs
		default:
			return nil, fmt.Errorf("plugin %q: unknown config key %q (want vendor, type, name, count, attributes)", PluginName, k)
		}
	}
	return New(cfg), nil
}

// stringMap accepts a map, or a list of maps (how HCL blocks decode).
func stringMap(v any) (map[string]string, error) {
	out := map[string]string{}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			out[k] = fmt.Sprint(val)
		}
	case map[string]string:
		for k, val := range x {
			out[k] = val
		}
	case []any:
		for _, e := range x {
			m, err := stringMap(e)
			if err != nil {
				return nil, err
			}
			for k, val := range m {
				out[k] = val
			}
		}
	case []map[string]any:
		for _, e := range x {
			for k, val := range e {
				out[k] = fmt.Sprint(val)
			}
		}
	default:
		return nil, fmt.Errorf("want a map of strings, got %T", v)
	}
	return out, nil
}

// Name implements devices.Plugin.
func (p *Plugin) Name() string { return PluginName }

// Fingerprint implements devices.Plugin.
func (p *Plugin) Fingerprint() []*structs.NodeDeviceResource {
	d := &structs.NodeDeviceResource{Vendor: p.cfg.Vendor, Type: p.cfg.Type, Name: p.cfg.Name,
		Attributes: map[string]*structs.Attribute{}}
	for _, id := range p.ids {
		d.Instances = append(d.Instances, &structs.NodeDevice{ID: id, Healthy: true})
	}
	for k, v := range p.cfg.Attributes {
		d.Attributes[k] = structs.ParseDeviceAttribute(v)
	}
	return []*structs.NodeDeviceResource{d}
}

// Reserve implements devices.Plugin.
func (p *Plugin) Reserve(ids []string) (*devices.Reservation, error) {
	known := map[string]bool{}
	for _, id := range p.ids {
		known[id] = true
	}
	for _, id := range ids {
		if !known[id] {
			return nil, fmt.Errorf("unknown device %q", id)
		}
	}
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	return &devices.Reservation{Envs: map[string]string{EnvVisibleDevices: strings.Join(sorted, ",")}}, nil
}
