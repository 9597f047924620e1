package exec

import (
	"os"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/isolate"
)

func TestParsePluginConfig(t *testing.T) {
	c, err := ParsePluginConfig(map[string]any{"no_pivot_root": true, "default_pid_mode": "host",
		"allow_caps": []any{"chown", "NET_RAW"}, "pids_limit": 100.0, "denied_host_uids": "0, 10-20"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.NoPivotRoot || c.DefaultPIDMode != "host" || c.DefaultIPCMode != "private" || len(c.AllowCaps) != 2 || c.PidsLimit != 100 {
		t.Errorf("parsed %+v", c)
	}
	if !c.DeniedUIDs.Contains(0) || !c.DeniedUIDs.Contains(15) || c.DeniedUIDs.Contains(21) || c.DeniedGIDs.Contains(0) {
		t.Errorf("denied uids %v gids %v", c.DeniedUIDs, c.DeniedGIDs)
	}
	for want, m := range map[string]map[string]any{
		`unknown key "allow_privileged"`:         {"allow_privileged": true},
		`default_ipc_mode must be "private" or`:  {"default_ipc_mode": "shareable"},
		`allow_caps: unknown capability "bogus"`: {"allow_caps": []any{"bogus"}},
		`denied_host_gids: "20-10" is not an ID`: {"denied_host_gids": "20-10"},
		"pids_limit must not be negative":        {"pids_limit": -1.0},
		"no_pivot_root must be a bool":           {"no_pivot_root": "yes"},
	} {
		if _, err := ParsePluginConfig(m); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want %q, got %v", m, want, err)
		}
	}
}

func TestParseTaskConfig(t *testing.T) {
	tc, err := ParseTaskConfig(map[string]any{"command": "app", "args": []any{"-v"}, "work_dir": "/local", "cap_drop": []any{"all"}})
	if err != nil || tc.Command != "app" || tc.WorkDir != "/local" || len(tc.CapDrop) != 1 {
		t.Fatalf("%+v %v", tc, err)
	}
	for want, m := range map[string]map[string]any{
		`"command" is required`:             {"args": []any{"x"}},
		"work_dir must be an absolute path": {"command": "x", "work_dir": "local"},
		`unknown key "image"`:               {"command": "x", "image": "redis"},
		"pids_limit must be a whole number": {"command": "x", "pids_limit": 1.5},
		"args[0] must be a string":          {"command": "x", "args": []any{1}},
		// A NUL byte cannot reach exec(2): refused at registration, not
		// a task failing at every start with "invalid argument".
		"args[1] contains a NUL byte":  {"command": "x", "args": []any{"ok", "a\x00b"}},
		"command contains a NUL byte":  {"command": "x\x00"},
		"work_dir contains a NUL byte": {"command": "x", "work_dir": "/a\x00"},
	} {
		if _, err := ParseTaskConfig(m); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want %q, got %v", m, want, err)
		}
	}
}

// The fingerprint: detected only as root; healthy only with the cgroup
// hierarchies the limits go to, else unhealthy saying which is missing.
func TestFingerprint(t *testing.T) {
	fp := New(Config{}).Fingerprint()
	if os.Geteuid() != 0 {
		if fp.Health != drivers.HealthUndetected || !strings.Contains(fp.HealthDescription, "must run as root") {
			t.Fatalf("non-root: %+v", fp)
		}
		return
	}
	old := isolate.CgroupRoot
	isolate.CgroupRoot = t.TempDir()
	defer func() { isolate.CgroupRoot = old }()
	fp = New(Config{}).Fingerprint()
	if fp.Health != drivers.HealthUnhealthy || !strings.Contains(fp.HealthDescription, "cgroup v1 controller memory is not mounted") || fp.Attributes["driver.exec"] != "" {
		t.Fatalf("without cgroups: %+v", fp)
	}
}
