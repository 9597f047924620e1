package podman

import (
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/drivers/docker"
)

// Name is the driver's name in jobspecs.
const Name = "podman"

// PluginName is the agent's plugin block for this driver, as the upstream
// driver's binary is named: `plugin "nomad-driver-podman" { config {} }`.
const PluginName = "nomad-driver-podman"

// DefaultSocket is the rootful podman API service's socket.
const DefaultSocket = "unix:///run/podman/podman.sock"

// Config is the driver's configuration.
type Config struct {
	Plugin docker.PluginConfig // from ParsePluginConfig
	Logger hclog.Logger
	// StateDir: as docker.Config's.
	StateDir string
}

// New returns the podman driver: the docker driver with podman's flavor,
// over the service's Docker-compatible API. It does not contact the
// service until used.
func New(cfg Config) *docker.Driver {
	if cfg.Plugin.Endpoint == "" {
		cfg.Plugin.Endpoint = DefaultSocket
	}
	cfg.Plugin.PluginName = PluginName
	return docker.New(docker.Config{
		Plugin:   cfg.Plugin,
		Logger:   cfg.Logger,
		StateDir: cfg.StateDir,
		Flavor:   docker.Flavor{Name: Name, ParseTask: ParseTaskConfig, Podman: true},
	})
}
