package qemu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Name is the driver's name in jobspecs.
const Name = "qemu"

// Accelerators the driver runs VMs with.
const (
	AccelTCG = "tcg" // software emulation, always available
	AccelKVM = "kvm" // hardware virtualisation through /dev/kvm
)

// driveInterfaces are qemu's -drive if= values (Nomad's list).
var driveInterfaces = []string{"ide", "scsi", "sd", "mtd", "floppy", "pflash", "virtio", "none"}

// TaskConfig is a task's `config {}` block.
type TaskConfig struct {
	ImagePath        string
	Accelerator      string
	Args             []string
	PortMap          map[string]int // port label -> guest port
	GracefulShutdown bool
	GuestAgent       bool
	DriveInterface   string
}

const taskKeys = "image_path, accelerator, args, port_map, graceful_shutdown, guest_agent, drive_interface"

// ValidateTaskConfig checks a task's `config {}` as StartTask reads it; the
// servers call it at registration (through the catalog).
func ValidateTaskConfig(m map[string]any) error {
	_, err := ParseTaskConfig(m)
	return err
}

// ParseTaskConfig reads a task's `config {}` block. Every error starts with
// "config: " and names the key.
func ParseTaskConfig(m map[string]any) (*TaskConfig, error) {
	tc := &TaskConfig{Accelerator: AccelTCG, DriveInterface: "ide"}
	for _, k := range sortedKeys(m) {
		if err := tc.set(k, m[k]); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	if strings.TrimSpace(tc.ImagePath) == "" {
		return nil, errors.New(`config: "image_path" is required`)
	}
	return tc, nil
}

func (tc *TaskConfig) set(k string, v any) (err error) {
	switch k {
	case "image_path":
		tc.ImagePath, err = asString(k, v)
	case "accelerator":
		var s string
		if s, err = asString(k, v); err == nil {
			switch s {
			case AccelTCG, AccelKVM:
				tc.Accelerator = s
			case "":
			default:
				return fmt.Errorf("accelerator must be %q or %q, got %q", AccelTCG, AccelKVM, s)
			}
		}
	case "args":
		tc.Args, err = asStringList(k, v)
	case "port_map":
		bs, e := asBlocks(k, v)
		if e != nil {
			return fmt.Errorf("port_map must be a map of port label to guest port, got %s", typeName(v))
		}
		tc.PortMap = map[string]int{}
		for _, b := range bs {
			for _, l := range sortedKeys(b) {
				p, e := asInt("port_map."+l, b[l])
				if e != nil {
					return e
				}
				if p < 1 || p > 65535 {
					return fmt.Errorf("port_map.%s must be a port between 1 and 65535, got %d", l, p)
				}
				tc.PortMap[l] = int(p)
			}
		}
	case "graceful_shutdown":
		tc.GracefulShutdown, err = asBool(k, v)
	case "guest_agent":
		tc.GuestAgent, err = asBool(k, v)
	case "drive_interface":
		var s string
		if s, err = asString(k, v); err == nil && s != "" {
			ok := false
			for _, d := range driveInterfaces {
				ok = ok || d == s
			}
			if !ok {
				return fmt.Errorf("drive_interface must be one of %s, got %q", strings.Join(driveInterfaces, ", "), s)
			}
			tc.DriveInterface = s
		}
	default:
		return fmt.Errorf("unknown key %q (qemu takes %s)", k, taskKeys)
	}
	return err
}

// PluginConfig is the agent's `plugin "qemu" { config { ... } }`.
type PluginConfig struct {
	// ImagePaths are the directories outside the allocation's directory
	// that a task's absolute image_path may point into.
	ImagePaths []string
	// ArgsAllowlist, when set, lists the only qemu flags a task's args may
	// pass ("-device", ...). Unset: any flag.
	ArgsAllowlist []string
}

// ParsePluginConfig reads the agent's `plugin "qemu" { config {} }`.
func ParsePluginConfig(m map[string]any) (PluginConfig, error) {
	var pc PluginConfig
	for _, k := range sortedKeys(m) {
		var err error
		switch k {
		case "image_paths":
			pc.ImagePaths, err = asStringList(k, m[k])
			for i, p := range pc.ImagePaths {
				if err == nil && !filepath.IsAbs(p) {
					err = fmt.Errorf("image_paths[%d] must be an absolute path, got %q", i, p)
				}
			}
		case "args_allowlist":
			pc.ArgsAllowlist, err = asStringList(k, m[k])
			for i, a := range pc.ArgsAllowlist {
				if err == nil && !strings.HasPrefix(a, "-") {
					err = fmt.Errorf("args_allowlist[%d] must be a qemu flag such as \"-device\", got %q", i, a)
				}
			}
		default:
			err = fmt.Errorf("unknown key %q (qemu's agent options: image_paths, args_allowlist)", k)
		}
		if err != nil {
			return PluginConfig{}, fmt.Errorf("config: %w", err)
		}
	}
	return pc, nil
}

// ValidatePluginConfig checks the agent's `plugin "qemu" { config {} }`.
func ValidatePluginConfig(m map[string]any) error {
	_, err := ParsePluginConfig(m)
	return err
}

// checkArgs refuses a flag the allow list does not name. A flag is an
// argument that starts with "-"; "-flag=value" is checked as "-flag".
func (pc PluginConfig) checkArgs(args []string) error {
	if len(pc.ArgsAllowlist) == 0 {
		return nil
	}
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		flag, _, _ := strings.Cut(a, "=")
		ok := false
		for _, w := range pc.ArgsAllowlist {
			ok = ok || w == flag || "-"+strings.TrimLeft(w, "-") == "-"+strings.TrimLeft(flag, "-")
		}
		if !ok {
			return fmt.Errorf("config: args[%d]: %q is not in the agent's qemu args_allowlist (%s)", i, flag, strings.Join(pc.ArgsAllowlist, ", "))
		}
	}
	return nil
}

// resolveImage turns image_path into the file qemu opens. A relative path
// is taken in the task directory and must stay inside it; an absolute path
// must lie inside the allocation's directory or one of the plugin's
// image_paths. Symbolic links are followed before the check, so a link
// cannot lead a task to a host file.
func (pc PluginConfig) resolveImage(imagePath, taskDir, allocDir string) (string, error) {
	p := imagePath
	var roots []string
	if filepath.IsAbs(p) {
		roots = append(roots, allocDir)
		roots = append(roots, pc.ImagePaths...)
	} else {
		p = filepath.Join(taskDir, p)
		roots = []string{taskDir}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("config: image_path %q: no such file (a relative path is taken in the task directory %s)", imagePath, taskDir)
		}
		return "", fmt.Errorf("config: image_path %q: %w", imagePath, err)
	}
	for _, r := range roots {
		if r == "" {
			continue
		}
		rr, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(rr, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			st, err := os.Stat(real)
			if err != nil {
				return "", fmt.Errorf("config: image_path %q: %w", imagePath, err)
			}
			if !st.Mode().IsRegular() {
				return "", fmt.Errorf("config: image_path %q is not a regular file", imagePath)
			}
			return real, nil
		}
	}
	if filepath.IsAbs(imagePath) {
		return "", fmt.Errorf("config: image_path %q is outside the allocation directory and the agent's qemu image_paths (%s)", imagePath, strings.Join(pc.ImagePaths, ", "))
	}
	return "", fmt.Errorf("config: image_path %q leaves the task directory", imagePath)
}
