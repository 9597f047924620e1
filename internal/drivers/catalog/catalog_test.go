package catalog

import (
	"strings"
	"testing"
)

func TestCheckTaskConfig(t *testing.T) {
	for _, tc := range []struct {
		driver  string
		config  map[string]any
		known   bool
		wantErr string
	}{
		{"raw_exec", map[string]any{"command": "/bin/sleep", "args": []any{"60"}}, true, ""},
		{"raw_exec", map[string]any{"command": "/bin/sleep", "oom_score_adj": 500.0}, true, `oom_score_adj is not supported by Drover's raw_exec yet`},
		{"raw_exec", map[string]any{"comand": "/bin/sleep", "command": "x", "zz": 1}, true, `unknown key "comand"`}, // the first, sorted
		{"raw_exec", map[string]any{}, true, `"command" is required`},
		{"mock_driver", map[string]any{"run_for": "1s", "exit_code": 2.0, "stdout_string": "hi"}, true, ""},
		{"mock_driver", map[string]any{"run_for": "soon"}, true, "run_for"},
		{"mock_driver", map[string]any{"kill_after": "1s"}, true, `unknown key "kill_after"`},
		{"docker", map[string]any{"image": "redis", "ports": []any{"http"}}, true, ""},
		{"docker", map[string]any{"image": "redis", "portz": []any{"http"}}, true, `unknown key "portz"`},
		{"docker", map[string]any{"image": "redis", "shm_size": "big"}, true, `shm_size must be an integer`},
		{"docker", map[string]any{"command": "x"}, true, `"image" is required`},
		{"podman", map[string]any{"image": "docker://redis", "ports": []any{"http"}, "working_dir": "/srv"}, true, ""},
		{"podman", map[string]any{"image": "docker-archive:local/hello.tar"}, true, ""},
		{"podman", map[string]any{"image": "redis", "work_dirr": "/srv"}, true, `unknown key "work_dirr"`},
		{"podman", map[string]any{"image": "redis", "memory_swap": "1g"}, true, `memory_swap is not supported by Drover's podman driver yet`},
		{"podman", map[string]any{"image": "redis", "working_dir": 3.0}, true, `working_dir must be a string`},
		{"podman", map[string]any{"image": "oci-archive:x.tar"}, true, `oci-archive: transport is not supported`},
		{"podman", map[string]any{"image": "redis", "shm_size": "huge"}, true, `shm_size must be a size such as "64m"`},
		{"lxc", map[string]any{"command": "x"}, false, ""},
		{"qemu", map[string]any{"image_path": "vm.img", "accelerator": "kvm", "port_map": []any{map[string]any{"http": 80.0}}}, true, ""},
		{"qemu", map[string]any{"image_path": "vm.img", "accelerator": "hvf"}, true, `accelerator must be "tcg" or "kvm"`},
		{"qemu", map[string]any{"image_path": "vm.img", "drive_interface": "usb"}, true, `drive_interface must be one of`},
		{"qemu", map[string]any{"args": []any{"-snapshot"}}, true, `"image_path" is required`},
		{"exec", map[string]any{"command": "sleep", "args": []any{"1"}, "cap_add": []any{"net_bind_service"}, "pids_limit": 20.0}, true, ""},
		{"exec", map[string]any{"command": "sleep", "cap_add": []any{"net_bindservice"}}, true, `cap_add: unknown capability "net_bindservice"`},
		{"exec", map[string]any{"command": "sleep", "pid_mode": "shared"}, true, `pid_mode must be "private" or "host"`},
		{"exec", map[string]any{"args": []any{"1"}}, true, `"command" is required`},
		{"java", map[string]any{"jar_path": "local/a.jar", "jvm_options": []any{"-Xmx64m"}}, true, ""},
		{"java", map[string]any{"command": "x"}, true, `unknown key "command"`},
	} {
		known, err := Builtin.CheckTaskConfig(tc.driver, tc.config)
		if known != tc.known {
			t.Errorf("%s %v: known = %v, want %v", tc.driver, tc.config, known, tc.known)
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s %v: unexpected error %v", tc.driver, tc.config, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s %v: error %v, want one containing %q", tc.driver, tc.config, err, tc.wantErr)
		}
	}
}

func TestPluginNames(t *testing.T) {
	if got := strings.Join(PluginNames(), ","); got != "docker,exec,fake_device,java,mock_driver,nomad-driver-podman,podman,qemu,raw_exec" {
		t.Fatalf("PluginNames = %s", got)
	}
	if !IsPlugin("raw_exec") || !IsPlugin("fake_device") || !IsPlugin("docker") || !IsPlugin("qemu") || !IsPlugin("nomad-driver-podman") || !IsPlugin("podman") || IsPlugin("lxc") || !IsPlugin("exec") || !IsPlugin("java") {
		t.Fatal("IsPlugin disagrees with PluginNames")
	}
}
