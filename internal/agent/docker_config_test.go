package agent

import (
	"testing"

	"github.com/drover-project/drover/internal/agent/config"
)

// -dev enables docker volumes (as Nomad's dev mode does) unless the plugin
// block sets them; the plugin block's options reach the driver.
func TestDockerConfigFromAgentConfig(t *testing.T) {
	dev := config.DevConfig()
	if c := (&Agent{config: dev}).dockerConfig(); !c.VolumesEnabled || c.AllowPrivileged {
		t.Fatalf("dev: %+v", c)
	}
	dev.Plugins = map[string]*config.PluginConfig{"docker": {Config: map[string]any{
		"volumes":          []map[string]any{{"enabled": false}},
		"allow_privileged": true,
	}}}
	if c := (&Agent{config: dev}).dockerConfig(); c.VolumesEnabled || !c.AllowPrivileged {
		t.Fatalf("dev with a plugin block: %+v", c)
	}
	if c := (&Agent{config: &config.Config{}}).dockerConfig(); c.VolumesEnabled || !c.GCImage {
		t.Fatalf("defaults: %+v", c)
	}
}
