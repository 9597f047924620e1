package podman

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/drivers/docker"
)

// DefaultClientHTTPTimeout is client_http_timeout's default, the upstream
// driver's: how long a fingerprint waits for podman's API service, which
// takes seconds to answer on a loaded host.
const DefaultClientHTTPTimeout = 60 * time.Second

// DefaultPluginConfig is what an agent without a `plugin
// "nomad-driver-podman"` block uses: the upstream driver's defaults
// (volumes enabled, containers removed, no image garbage collection, which
// the upstream driver does not do either) on the rootful socket.
func DefaultPluginConfig() docker.PluginConfig {
	c := docker.DefaultPluginConfig()
	c.FingerprintTimeout = DefaultClientHTTPTimeout
	c.PluginName = PluginName
	c.Endpoint = DefaultSocket
	c.VolumesEnabled = true
	c.GCImage = false
	return c
}

// ValidatePluginConfig checks the agent's plugin block config.
func ValidatePluginConfig(m map[string]any) error {
	_, err := ParsePluginConfig(m)
	return err
}

// pluginKeys are the upstream keys this driver reads; the shared ones mean
// what the docker driver's keys of the same name mean.
var pluginKeys = []string{"allow_caps", "allow_privileged", "client_http_timeout", "disable_log_collection", "extra_labels", "gc", "socket_path", "volumes"}

// ParsePluginConfig reads `plugin "nomad-driver-podman" { config {} }`
// over the defaults. Unknown keys, and upstream keys Drover does not
// implement, are errors naming the key.
func ParsePluginConfig(m map[string]any) (docker.PluginConfig, error) {
	c := DefaultPluginConfig()
	timeout := DefaultClientHTTPTimeout
	shared := map[string]any{}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case "socket_path":
			s, ok := v.(string)
			if !ok || s == "" {
				return c, fmt.Errorf("config: socket_path must be a socket URL such as %q, got %v", DefaultSocket, v)
			}
			if !strings.Contains(s, "://") {
				s = "unix://" + s
			}
			shared["endpoint"] = s
		case "gc":
			b := asBlock(v)
			if b == nil {
				return c, fmt.Errorf("config: gc must be a block, got %T", v)
			}
			for gk := range b {
				if gk != "container" {
					return c, fmt.Errorf("config: unknown key %q in gc (it takes container)", gk)
				}
			}
			shared[k] = v
		case "volumes", "allow_privileged", "allow_caps", "extra_labels", "disable_log_collection":
			shared[k] = v
		case "client_http_timeout":
			str, _ := v.(string)
			d, err := time.ParseDuration(str)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("config: client_http_timeout must be a positive duration such as \"60s\", got %v", v)
			}
			timeout = d
		case "socket", "recover_stopped", "dns_servers", "logging":
			return c, fmt.Errorf("config: %s is not supported by Drover's podman driver yet; remove it", k)
		default:
			return c, fmt.Errorf("config: unknown key %q (podman's agent options: %s)", k, strings.Join(pluginKeys, ", "))
		}
	}
	pc, err := docker.ParsePluginConfig(shared)
	if err != nil {
		return c, err
	}
	pc.PluginName, pc.GCImage, pc.FingerprintTimeout = PluginName, false, timeout
	if pc.Endpoint == "" {
		pc.Endpoint = DefaultSocket
	}
	if vb := asBlock(m["volumes"]); vb == nil || vb["enabled"] == nil {
		pc.VolumesEnabled = true
	}
	return pc, nil
}

func asBlock(v any) map[string]any {
	switch b := v.(type) {
	case map[string]any:
		return b
	case []map[string]any:
		if len(b) == 1 {
			return b[0]
		}
	case []any:
		if len(b) == 1 {
			if m, ok := b[0].(map[string]any); ok {
				return m
			}
		}
	}
	return nil
}
