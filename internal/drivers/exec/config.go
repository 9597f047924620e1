package exec

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/drivers/isolate"
)

// Namespace modes of pid_mode and ipc_mode.
const (
	ModePrivate = "private"
	ModeHost    = "host"
)

// PluginConfig is the agent's `plugin "exec" { config { ... } }` (and
// java's, which takes the same keys).
type PluginConfig struct {
	NoPivotRoot    bool
	DefaultPIDMode string
	DefaultIPCMode string
	AllowCaps      []string
	// PidsLimit, when > 0, is the pids limit of every task that sets
	// none, and the most a task may ask for.
	PidsLimit int64
	// DeniedUIDs/DeniedGIDs: a task whose user has one of these IDs (its
	// primary group or any of its groups for GIDs) is refused.
	DeniedUIDs IDSet
	DeniedGIDs IDSet
}

// IDSet is a set of uid or gid ranges, written "0,10-20".
type IDSet [][2]int

// ParseIDSet reads "0,10-20" (empty: no IDs).
func ParseIDSet(s string) (IDSet, error) {
	var out IDSet
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q is not an ID or a range lo-hi", part)
		}
		out = append(out, [2]int{a, b})
	}
	return out, nil
}

// Contains reports whether id is in the set.
func (s IDSet) Contains(id int) bool {
	for _, r := range s {
		if id >= r[0] && id <= r[1] {
			return true
		}
	}
	return false
}

// DefaultPluginConfig is Nomad's defaults: private namespaces, pivot_root,
// capabilities limited to the default set.
func DefaultPluginConfig() PluginConfig {
	return PluginConfig{DefaultPIDMode: ModePrivate, DefaultIPCMode: ModePrivate, AllowCaps: isolate.DefaultCaps()}
}

// ValidatePluginConfig checks the agent's plugin block.
func ValidatePluginConfig(m map[string]any) error {
	_, err := ParsePluginConfig(m)
	return err
}

// ParsePluginConfig reads the agent's plugin block over the defaults.
func ParsePluginConfig(m map[string]any) (PluginConfig, error) {
	c := DefaultPluginConfig()
	for _, k := range sortedKeys(m) {
		v := m[k]
		var err error
		switch k {
		case "no_pivot_root":
			c.NoPivotRoot, err = asBool(k, v)
		case "default_pid_mode":
			c.DefaultPIDMode, err = asMode(k, v)
		case "default_ipc_mode":
			c.DefaultIPCMode, err = asMode(k, v)
		case "allow_caps":
			c.AllowCaps, err = asStrings(k, v)
			if err == nil {
				for _, cp := range c.AllowCaps {
					if _, ok := isolate.NormalizeCap(cp); !ok {
						err = fmt.Errorf("config: allow_caps: unknown capability %q", cp)
						break
					}
				}
			}
		case "pids_limit":
			c.PidsLimit, err = asInt(k, v)
			if err == nil && c.PidsLimit < 0 {
				err = fmt.Errorf("config: pids_limit must not be negative, got %d", c.PidsLimit)
			}
		case "denied_host_uids", "denied_host_gids":
			var str string
			if str, err = asString(k, v); err == nil {
				var set IDSet
				if set, err = ParseIDSet(str); err != nil {
					err = fmt.Errorf("config: %s: %w", k, err)
				} else if k == "denied_host_uids" {
					c.DeniedUIDs = set
				} else {
					c.DeniedGIDs = set
				}
			}
		default:
			err = fmt.Errorf("config: unknown key %q (exec's agent options: no_pivot_root, default_pid_mode, default_ipc_mode, allow_caps, pids_limit, denied_host_uids, denied_host_gids)", k)
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

// TaskConfig is an exec task's `config {}` block.
type TaskConfig struct {
	Command   string
	Args      []string
	PIDMode   string
	IPCMode   string
	CapAdd    []string
	CapDrop   []string
	WorkDir   string
	PidsLimit int64
}

// ValidateTaskConfig checks a task's `config {}` block as StartTask reads
// it; servers call it at registration.
func ValidateTaskConfig(m map[string]any) error {
	_, err := ParseTaskConfig(m)
	return err
}

// ParseTaskConfig reads an exec task's config block.
func ParseTaskConfig(m map[string]any) (*TaskConfig, error) {
	tc := &TaskConfig{}
	for _, k := range sortedKeys(m) {
		v := m[k]
		var err error
		switch k {
		case "command":
			tc.Command, err = asString(k, v)
		case "args":
			tc.Args, err = asStrings(k, v)
		case "pid_mode":
			tc.PIDMode, err = asMode(k, v)
		case "ipc_mode":
			tc.IPCMode, err = asMode(k, v)
		case "cap_add":
			tc.CapAdd, err = asCaps(k, v)
		case "cap_drop":
			tc.CapDrop, err = asCaps(k, v)
		case "work_dir":
			tc.WorkDir, err = asString(k, v)
			if err == nil && tc.WorkDir != "" && !strings.HasPrefix(tc.WorkDir, "/") {
				err = fmt.Errorf("config: work_dir must be an absolute path inside the task, got %q", tc.WorkDir)
			}
		case "pids_limit":
			tc.PidsLimit, err = asInt(k, v)
			if err == nil && tc.PidsLimit < 0 {
				err = fmt.Errorf("config: pids_limit must not be negative, got %d", tc.PidsLimit)
			}
		default:
			err = fmt.Errorf("config: unknown key %q (exec takes command, args, pid_mode, ipc_mode, cap_add, cap_drop, work_dir, pids_limit)", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(tc.Command) == "" {
		return nil, errors.New(`config: "command" is required`)
	}
	return tc, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad key named is the same every time
	return keys
}

func asString(k string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("config: %s must be a string, got %T", k, v)
	}
	if strings.ContainsRune(s, 0) {
		// exec(2) cannot pass it: the task would fail at every start.
		return "", fmt.Errorf("config: %s contains a NUL byte", k)
	}
	return s, nil
}

func asBool(k string, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("config: %s must be a bool, got %T", k, v)
	}
	return b, nil
}

func asInt(k string, v any) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int64:
		return n, nil
	case float64:
		if n == float64(int64(n)) {
			return int64(n), nil
		}
	}
	return 0, fmt.Errorf("config: %s must be a whole number, got %v", k, v)
}

func asMode(k string, v any) (string, error) {
	s, err := asString(k, v)
	if err != nil {
		return "", err
	}
	switch s {
	case "", ModePrivate, ModeHost:
		return s, nil
	}
	return "", fmt.Errorf("config: %s must be %q or %q, got %q", k, ModePrivate, ModeHost, s)
}

func asStrings(k string, v any) ([]string, error) {
	switch a := v.(type) {
	case nil:
		return nil, nil
	case []string:
		for i, e := range a {
			if strings.ContainsRune(e, 0) {
				return nil, fmt.Errorf("config: %s[%d] contains a NUL byte", k, i)
			}
		}
		return append([]string(nil), a...), nil
	case []any:
		out := make([]string, 0, len(a))
		for i, e := range a {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("config: %s[%d] must be a string, got %T", k, i, e)
			}
			if strings.ContainsRune(s, 0) {
				return nil, fmt.Errorf("config: %s[%d] contains a NUL byte", k, i)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("config: %s must be a list of strings, got %T", k, v)
}

func asCaps(k string, v any) ([]string, error) {
	caps, err := asStrings(k, v)
	if err != nil {
		return nil, err
	}
	for _, c := range caps {
		if _, ok := isolate.NormalizeCap(c); !ok {
			return nil, fmt.Errorf("config: %s: unknown capability %q", k, c)
		}
	}
	return caps, nil
}
