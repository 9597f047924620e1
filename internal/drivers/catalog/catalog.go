// Package catalog names the task drivers and device plugins built into
// Drover and checks a task's driver `config {}` against the driver's schema
// without running anything. Servers use it at job registration (a typo or
// an option Drover does not implement is refused there, with the task's
// path, instead of failing when a client starts the task); the agent
// configuration uses it to refuse `plugin` blocks for plugins that do not
// exist.
//
// It must never start a driver, touch the host, or hold state: it only
// knows names and schemas.
package catalog

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover-project/drover/internal/devices/fake"
	"github.com/drover-project/drover/internal/drivers/docker"
	"github.com/drover-project/drover/internal/drivers/exec"
	"github.com/drover-project/drover/internal/drivers/java"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/drivers/podman"
	"github.com/drover-project/drover/internal/drivers/qemu"
	"github.com/drover-project/drover/internal/drivers/rawexec"
)

// drivers maps each built-in task driver to its config check. mock_driver
// runs only on -dev agents, but its jobs are checked everywhere.
var drivers = map[string]func(map[string]any) error{
	rawexec.Name: rawexec.ValidateTaskConfig,
	docker.Name:  docker.ValidateTaskConfig,
	podman.Name:  podman.ValidateTaskConfig,
	mock.Name:    mock.ValidateTaskConfig,
	qemu.Name:    qemu.ValidateTaskConfig,
	exec.Name:    exec.ValidateTaskConfig,
	java.Name:    java.ValidateTaskConfig,
}

// plugins maps each name a `plugin "<name>"` agent block may have (the
// drivers and the device plugins) to the check of its `config {}`.
var plugins = map[string]func(map[string]any) error{
	rawexec.Name: rawexec.ValidatePluginConfig,
	docker.Name:  docker.ValidatePluginConfig,
	qemu.Name:    qemu.ValidatePluginConfig,
	exec.Name:    exec.ValidatePluginConfig,
	java.Name:    exec.ValidatePluginConfig,
	// The upstream podman driver's plugin block is named after its binary
	// (nomad-driver-podman); an operator who named it podman used that.
	podman.PluginName: podman.ValidatePluginConfig,
	podman.Name:       podman.ValidatePluginConfig,
	mock.Name: func(m map[string]any) error {
		for k := range m {
			return fmt.Errorf("config: unknown key %q (%s takes no agent options)", k, mock.Name)
		}
		return nil
	},
	fake.PluginName: func(m map[string]any) error {
		if _, err := fake.FromConfig(m); err != nil {
			return fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), fmt.Sprintf("plugin %q: ", fake.PluginName)))
		}
		return nil
	},
}

// Builtin is the catalog of this binary, as a value the job checks take.
var Builtin builtin

type builtin struct{}

// CheckTaskConfig reports whether driver is built in and, when it is,
// whether config is valid for it.
func (builtin) CheckTaskConfig(driver string, config map[string]any) (known bool, err error) {
	check, ok := drivers[driver]
	if !ok {
		return false, nil
	}
	return true, check(config)
}

// DriverNames lists the built-in task drivers, sorted.
func DriverNames() []string {
	out := make([]string, 0, len(drivers))
	for n := range drivers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// PluginNames lists every name a `plugin "<name>"` agent block may have:
// the built-in drivers and device plugins, sorted.
func PluginNames() []string {
	out := make([]string, 0, len(plugins))
	for n := range plugins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// IsPlugin reports whether name is a built-in driver or device plugin.
func IsPlugin(name string) bool {
	_, ok := plugins[name]
	return ok
}

// CheckPluginConfig checks the `config {}` of a `plugin "<name>"` agent
// block against what the built-in plugin reads. name must be IsPlugin.
func CheckPluginConfig(name string, config map[string]any) error {
	check, ok := plugins[name]
	if !ok {
		return fmt.Errorf("plugin %q is not built in", name)
	}
	return check(config)
}
