package podman

import (
	"fmt"
	"sort"
	"strings"

	units "github.com/docker/go-units"

	"github.com/drover-project/drover/internal/drivers/docker"
)

// Task `config {}` keys, as the upstream nomad-driver-podman names them.
// Most mean what the docker driver's key of the same name means; the
// others are renamed onto it.
var (
	// sameKeys pass to the docker driver's parser unchanged. The dns_*
	// keys are the docker driver's (podman's service applies them).
	sameKeys = map[string]bool{
		"args": true, "auth_soft_fail": true, "cap_add": true, "cap_drop": true, "command": true,
		"cpu_hard_limit": true, "cpu_cfs_period": true, "dns_servers": true, "dns_search_domains": true,
		"dns_options": true, "extra_hosts": true, "force_pull": true, "hostname": true,
		"image_pull_timeout": true, "init": true, "labels": true, "network_mode": true, "pids_limit": true,
		"ports": true, "port_map": true, "privileged": true, "readonly_rootfs": true, "security_opt": true,
		"sysctl": true, "tty": true, "ulimit": true, "volumes": true, "work_dir": true,
	}
	// renamed: podman key -> docker driver key.
	renamed = map[string]string{"working_dir": "work_dir", "userns": "userns_mode"}
	// notYet are upstream keys Drover's podman driver refuses (rather than
	// silently ignoring them).
	notYet = map[string]bool{
		"apparmor_profile": true, "devices": true, "init_path": true, "logging": true,
		"memory_reservation": true, "memory_swap": true, "memory_swappiness": true,
		"selinux_opts": true, "socket": true, "tmpfs": true,
	}
)

// ValidateTaskConfig checks a task's `config {}` as StartTask reads it (the
// servers call it at registration, through the catalog).
func ValidateTaskConfig(m map[string]any) error {
	_, err := ParseTaskConfig(m)
	return err
}

// ParseTaskConfig reads a podman task's `config {}` block into the docker
// driver's task config. Every error starts with "config: " and names the
// key as the job wrote it.
func ParseTaskConfig(m map[string]any) (*docker.TaskConfig, error) {
	out := make(map[string]any, len(m))
	fromArchive := false
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch {
		case k == "image":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("config: image must be a string, got %T", v)
			}
			ref, load, err := parseImage(s)
			if err != nil {
				return nil, fmt.Errorf("config: image: %w", err)
			}
			if load != "" {
				out["load"], fromArchive = load, true
				ref = "docker-archive" // replaced by the archive's tag at start
			}
			out["image"] = ref
		case k == "entrypoint":
			// Upstream took a string before it took a list.
			if s, ok := v.(string); ok {
				v = []any{s}
			}
			out[k] = v
		case k == "shm_size":
			// A size such as "64m" (upstream), or bytes.
			if s, ok := v.(string); ok {
				n, err := units.RAMInBytes(s)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("config: shm_size must be a size such as \"64m\", got %q", s)
				}
				v = n
			}
			out[k] = v
		case k == "auth":
			a, err := parseAuth(v)
			if err != nil {
				return nil, fmt.Errorf("config: %w", err)
			}
			out[k] = a
		case sameKeys[k]:
			out[k] = v
		case renamed[k] != "":
			if _, ok := v.(string); !ok {
				return nil, fmt.Errorf("config: %s must be a string, got %T", k, v)
			}
			out[renamed[k]] = v
		case notYet[k]:
			return nil, fmt.Errorf("config: %s is not supported by Drover's podman driver yet; remove it", k)
		default:
			return nil, fmt.Errorf("config: unknown key %q (podman's task options: %s)", k, taskKeys())
		}
	}
	tc, err := docker.ParseTaskConfig(out)
	if err != nil {
		return nil, err
	}
	if fromArchive {
		tc.Image, tc.ImageFromLoad = "", true
	}
	return tc, nil
}

// parseImage reads upstream's image transports: "docker://ref" (a
// registry image), "docker-archive:path" (a `docker save`/`podman save`
// tarball in the task dir, e.g. from an artifact, loaded at start), or a
// plain reference.
func parseImage(s string) (ref, load string, err error) {
	switch {
	case strings.TrimSpace(s) == "":
		return "", "", nil // the docker parser says it is required
	case strings.HasPrefix(s, "docker://"):
		return strings.TrimPrefix(s, "docker://"), "", nil
	case strings.HasPrefix(s, "docker-archive:"):
		p := strings.TrimPrefix(s, "docker-archive:")
		if p == "" {
			return "", "", fmt.Errorf("docker-archive: needs the tarball's path, e.g. \"docker-archive:local/image.tar\"")
		}
		return "", p, nil
	case strings.HasPrefix(s, "oci-archive:"), strings.HasPrefix(s, "oci:"), strings.HasPrefix(s, "containers-storage:"):
		t, _, _ := strings.Cut(s, ":")
		return "", "", fmt.Errorf("the %s: transport is not supported by Drover's podman driver yet (use docker-archive: or a registry reference)", t)
	}
	return s, "", nil
}

// parseAuth maps upstream's auth {username, password} onto the docker
// driver's block.
func parseAuth(v any) (any, error) {
	blocks, ok := v.([]map[string]any)
	if !ok {
		if b, isMap := v.(map[string]any); isMap {
			blocks = []map[string]any{b}
		} else if l, isList := v.([]any); isList && len(l) == 1 {
			if b, isMap := l[0].(map[string]any); isMap {
				blocks = []map[string]any{b}
			}
		}
	}
	if len(blocks) != 1 {
		return nil, fmt.Errorf("auth must be one block, got %T", v)
	}
	out := map[string]any{}
	for k, x := range blocks[0] {
		switch k {
		case "username", "password":
			out[k] = x
		case "tls_verify":
			if b, ok := x.(bool); !ok || !b {
				return nil, fmt.Errorf("auth.tls_verify = false is not supported by Drover's podman driver yet; remove it")
			}
		default:
			return nil, fmt.Errorf("unknown key %q in auth (it takes username, password, tls_verify)", k)
		}
	}
	return out, nil
}

func taskKeys() string {
	var ks []string
	for k := range sameKeys {
		ks = append(ks, k)
	}
	for k := range renamed {
		ks = append(ks, k)
	}
	ks = append(ks, "image", "entrypoint", "shm_size", "auth")
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
