package docker

import (
	"fmt"
	"strings"
	"time"
)

// Name is the driver's name in jobspecs.
const Name = "docker"

// defaultAllowCaps is Docker's default capability set, which Nomad's
// allow_caps defaults to: cap_add may only add from this list.
var defaultAllowCaps = []string{
	"audit_write", "chown", "dac_override", "fowner", "fsetid", "kill",
	"mknod", "net_bind_service", "setfcap", "setgid", "setpcap", "setuid",
	"sys_chroot",
}

// PluginConfig is the agent's `plugin "docker" { config { ... } }`, with
// Nomad's keys and defaults.
type PluginConfig struct {
	// PluginName is the agent's plugin block this came from, for messages
	// ("docker" when empty; the podman driver sets its own).
	PluginName string
	// Endpoint is the engine's address ("unix:///var/run/docker.sock",
	// "tcp://host:2376"); empty: DOCKER_HOST or the default socket.
	Endpoint string
	TLSCert  string
	TLSKey   string
	TLSCA    string
	// AuthConfig is a docker config.json whose "auths" supply registry
	// credentials; AuthHelper is a docker-credential-<helper> to ask.
	AuthConfig string
	AuthHelper string

	GCImage      bool
	GCImageDelay time.Duration
	GCContainer  bool

	VolumesEnabled bool
	SELinuxLabel   string

	AllowPrivileged bool
	AllowCaps       []string // lower case, without CAP_; "all" allows any
	AllowRuntimes   []string

	PullActivityTimeout time.Duration
	// PidsLimit caps a task's pids_limit (0: no cap).
	PidsLimit int64
	// ExtraLabels names the Nomad labels put on every container
	// (job_name, job_id, task_group_name, task_name, namespace, node_id,
	// node_name; "*" for all; the alloc ID is always set).
	ExtraLabels []string
	// LoggingType/LoggingConfig: the engine log driver for containers.
	LoggingType   string
	LoggingConfig map[string]string
	// DisableLogCollection: no streaming into the task's log files.
	DisableLogCollection bool
	// FingerprintTimeout bounds one fingerprint's calls to the engine
	// (zero: 5 s). podman's client_http_timeout sets it: its API service
	// answers in seconds on a loaded host.
	FingerprintTimeout time.Duration
}

// DefaultPluginConfig is what an agent without a `plugin "docker"` block
// uses (Nomad's defaults).
func DefaultPluginConfig() PluginConfig {
	return PluginConfig{
		GCImage:             true,
		GCImageDelay:        3 * time.Minute,
		GCContainer:         true,
		AllowCaps:           append([]string(nil), defaultAllowCaps...),
		AllowRuntimes:       []string{"runc", "nvidia"},
		PullActivityTimeout: 2 * time.Minute,
		LoggingType:         "json-file",
		// As Nomad: the engine's own copy of the output (which Drover
		// streams into the task's rotated files) stays small.
		LoggingConfig: map[string]string{"max-file": "2", "max-size": "2m"},
	}
}

// ValidatePluginConfig checks the agent's `plugin "docker" { config {} }`.
func ValidatePluginConfig(m map[string]any) error {
	_, err := ParsePluginConfig(m)
	return err
}

// ParsePluginConfig reads the agent's plugin config over the defaults.
// Unknown keys, and Nomad keys Drover does not implement, are errors naming
// the key.
func ParsePluginConfig(m map[string]any) (PluginConfig, error) {
	c := DefaultPluginConfig()
	err := c.parse(m)
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

func (c *PluginConfig) parse(m map[string]any) error {
	for _, k := range sortedKeys(m) {
		v := m[k]
		var err error
		switch k {
		case "endpoint":
			c.Endpoint, err = asString(k, v)
		case "tls":
			err = c.parseSub(k, v, map[string]func(string, any) error{
				"cert": func(k string, v any) (e error) { c.TLSCert, e = asString(k, v); return },
				"key":  func(k string, v any) (e error) { c.TLSKey, e = asString(k, v); return },
				"ca":   func(k string, v any) (e error) { c.TLSCA, e = asString(k, v); return },
			})
		case "auth":
			err = c.parseSub(k, v, map[string]func(string, any) error{
				"config": func(k string, v any) (e error) { c.AuthConfig, e = asString(k, v); return },
				"helper": func(k string, v any) (e error) { c.AuthHelper, e = asString(k, v); return },
			})
		case "gc":
			err = c.parseSub(k, v, map[string]func(string, any) error{
				"image":       func(k string, v any) (e error) { c.GCImage, e = asBool(k, v); return },
				"image_delay": func(k string, v any) (e error) { c.GCImageDelay, e = asDuration(k, v); return },
				"container":   func(k string, v any) (e error) { c.GCContainer, e = asBool(k, v); return },
			})
		case "volumes":
			err = c.parseSub(k, v, map[string]func(string, any) error{
				"enabled":      func(k string, v any) (e error) { c.VolumesEnabled, e = asBool(k, v); return },
				"selinuxlabel": func(k string, v any) (e error) { c.SELinuxLabel, e = asString(k, v); return },
			})
		case "allow_privileged":
			c.AllowPrivileged, err = asBool(k, v)
		case "allow_caps":
			var caps []string
			caps, err = asStringList(k, v)
			c.AllowCaps = normalizeCaps(caps)
		case "allow_runtimes":
			c.AllowRuntimes, err = asStringList(k, v)
		case "pull_activity_timeout":
			c.PullActivityTimeout, err = asDuration(k, v)
			if err == nil && c.PullActivityTimeout < time.Minute {
				err = fmt.Errorf("pull_activity_timeout must be at least 1m, got %s", c.PullActivityTimeout)
			}
		case "pids_limit":
			c.PidsLimit, err = asInt(k, v)
			if err == nil && c.PidsLimit < 0 {
				err = fmt.Errorf("pids_limit must not be negative")
			}
		case "extra_labels":
			c.ExtraLabels, err = asStringList(k, v)
		case "logging":
			c.LoggingConfig = nil // the block replaces the default whole
			err = c.parseSub(k, v, map[string]func(string, any) error{
				"type": func(k string, v any) (e error) { c.LoggingType, e = asString(k, v); return },
				"config": func(k string, v any) (e error) {
					c.LoggingConfig, e = asStringMap(k, v)
					return
				},
			})
			if err == nil {
				err = checkLogDriver("logging.type", c.LoggingType)
			}
		case "disable_log_collection":
			c.DisableLogCollection, err = asBool(k, v)
		case "infra_image", "infra_image_pull_timeout", "nvidia_runtime", "windows_allow_insecure_container_admin":
			err = fmt.Errorf("%s is not supported by Drover's docker driver yet; remove it", k)
		default:
			err = fmt.Errorf("unknown key %q (docker's agent options: endpoint, tls, auth, gc, volumes, allow_privileged, allow_caps, allow_runtimes, pull_activity_timeout, pids_limit, extra_labels, logging, disable_log_collection)", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseSub reads a nested block whose keys are all in fields.
func (c *PluginConfig) parseSub(key string, v any, fields map[string]func(string, any) error) error {
	b, err := asBlock(key, v)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(b) {
		f, ok := fields[k]
		if !ok {
			if key == "gc" && k == "dangling_containers" {
				return fmt.Errorf("gc.dangling_containers is not supported by Drover's docker driver yet; remove it")
			}
			names := make([]string, 0, len(fields))
			for n := range fields {
				names = append(names, n)
			}
			return fmt.Errorf("unknown key %q in %s (it takes %s)", k, key, strings.Join(sortStrings(names), ", "))
		}
		if err := f(key+"."+k, b[k]); err != nil {
			return err
		}
	}
	return nil
}

func sortStrings(s []string) []string {
	m := make(map[string]any, len(s))
	for _, x := range s {
		m[x] = nil
	}
	return sortedKeys(m)
}

func (c *PluginConfig) pluginName() string {
	if c.PluginName == "" {
		return Name
	}
	return c.PluginName
}

func normalizeCaps(caps []string) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		c = strings.ToLower(strings.TrimSpace(c))
		out = append(out, strings.TrimPrefix(c, "cap_"))
	}
	return out
}

// checkLogDriver refuses engine log drivers whose output cannot be read
// back through the API: the task's log files would stay empty.
func checkLogDriver(key, t string) error {
	switch t {
	case "", "json-file", "local", "journald":
		return nil
	}
	return fmt.Errorf("%s %q is not supported: Drover streams container output into the task's log files and can read it only from json-file, local or journald", key, t)
}
