package qemu

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

func TestParseTaskConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      map[string]any
		want    *TaskConfig
		wantErr string
	}{
		{"defaults", map[string]any{"image_path": "vm.img"},
			&TaskConfig{ImagePath: "vm.img", Accelerator: "tcg", DriveInterface: "ide"}, ""},
		{"everything", map[string]any{
			"image_path": "vm.img", "accelerator": "kvm", "args": []any{"-snapshot"},
			"port_map":          []any{map[string]any{"http": 8080.0}, map[string]any{"ssh": int64(22)}},
			"graceful_shutdown": true, "guest_agent": "true", "drive_interface": "virtio",
		}, &TaskConfig{ImagePath: "vm.img", Accelerator: "kvm", Args: []string{"-snapshot"},
			PortMap: map[string]int{"http": 8080, "ssh": 22}, GracefulShutdown: true, GuestAgent: true, DriveInterface: "virtio"}, ""},
		{"port_map as a map", map[string]any{"image_path": "a", "port_map": map[string]any{"web": "80"}},
			&TaskConfig{ImagePath: "a", Accelerator: "tcg", DriveInterface: "ide", PortMap: map[string]int{"web": 80}}, ""},
		{"no image", map[string]any{"accelerator": "tcg"}, nil, `config: "image_path" is required`},
		{"bad accelerator", map[string]any{"image_path": "a", "accelerator": "hvf"}, nil, `config: accelerator must be "tcg" or "kvm", got "hvf"`},
		{"bad interface", map[string]any{"image_path": "a", "drive_interface": "usb"}, nil, `config: drive_interface must be one of`},
		{"bad port", map[string]any{"image_path": "a", "port_map": map[string]any{"web": 70000.0}}, nil, `config: port_map.web must be a port between 1 and 65535`},
		{"port_map not a map", map[string]any{"image_path": "a", "port_map": "web"}, nil, `config: port_map must be a map`},
		{"args not strings", map[string]any{"image_path": "a", "args": []any{1.0}}, nil, `config: args[0] must be a string`},
		{"unknown key", map[string]any{"image_path": "a", "imagepath": "b"}, nil, `config: unknown key "imagepath"`},
		{"graceful not a bool", map[string]any{"image_path": "a", "graceful_shutdown": "soon"}, nil, `config: graceful_shutdown must be a boolean`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTaskConfig(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParsePluginConfig(t *testing.T) {
	pc, err := ParsePluginConfig(map[string]any{"image_paths": []any{"/srv/images"}, "args_allowlist": []any{"-snapshot", "-device"}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pc, PluginConfig{ImagePaths: []string{"/srv/images"}, ArgsAllowlist: []string{"-snapshot", "-device"}}) {
		t.Fatalf("got %+v", pc)
	}
	for in, want := range map[string]map[string]any{
		`config: image_paths[0] must be an absolute path`:                                   {"image_paths": []any{"images"}},
		`config: args_allowlist[0] must be a qemu flag`:                                     {"args_allowlist": []any{"device"}},
		`config: unknown key "enabled" (qemu's agent options: image_paths, args_allowlist)`: {"enabled": true},
	} {
		if err := ValidatePluginConfig(want); err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("%v: error %v, want %q", want, err, in)
		}
	}
}

func TestArgsAllowlist(t *testing.T) {
	pc := PluginConfig{ArgsAllowlist: []string{"-snapshot", "-device"}}
	if err := pc.checkArgs([]string{"-snapshot", "-device", "virtio-rng-pci", "--device=e1000"}); err != nil {
		t.Fatalf("allowed flags refused: %v", err)
	}
	err := pc.checkArgs([]string{"-snapshot", "-drive", "file=/etc/shadow"})
	if err == nil || !strings.Contains(err.Error(), `args[1]: "-drive" is not in the agent's qemu args_allowlist`) {
		t.Fatalf("error %v, want -drive refused", err)
	}
	if err := (PluginConfig{}).checkArgs([]string{"-drive", "x"}); err != nil {
		t.Fatalf("no allow list must allow any flag: %v", err)
	}
}

func TestResolveImage(t *testing.T) {
	root := t.TempDir()
	alloc := filepath.Join(root, "alloc")
	task := filepath.Join(alloc, "web")
	images := filepath.Join(root, "images")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(task, "local"), images, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("disk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(task, "local", "vm.img"))
	write(filepath.Join(images, "base.img"))
	write(filepath.Join(outside, "secret.img"))
	if err := os.Symlink(filepath.Join(outside, "secret.img"), filepath.Join(task, "local", "link.img")); err != nil {
		t.Fatal(err)
	}
	pc := PluginConfig{ImagePaths: []string{images}}
	for _, tc := range []struct {
		path, want, wantErr string
	}{
		{"local/vm.img", filepath.Join(task, "local", "vm.img"), ""},
		{filepath.Join(task, "local", "vm.img"), filepath.Join(task, "local", "vm.img"), ""}, // ${NOMAD_TASK_DIR}/vm.img
		{filepath.Join(images, "base.img"), filepath.Join(images, "base.img"), ""},
		{"../../outside/secret.img", "", "leaves the task directory"},
		{"local/link.img", "", "leaves the task directory"},
		{filepath.Join(outside, "secret.img"), "", "is outside the allocation directory and the agent's qemu image_paths"},
		{"local/missing.img", "", "no such file"},
		{"local", "", "is not a regular file"},
	} {
		got, err := pc.resolveImage(tc.path, task, alloc)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: got %q, %v; want an error containing %q", tc.path, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
}

func TestCommandArgs(t *testing.T) {
	cfg := &drivers.TaskConfig{
		ID: "a1/vm", Name: "vm,1",
		Resources: &structs.AllocatedTaskResources{
			Memory: structs.AllocatedMemoryResources{MemoryMB: 256},
			Cpu:    structs.AllocatedCpuResources{ReservedCores: []uint16{0, 1}},
		},
		Ports: structs.AllocatedPorts{{Label: "http", Value: 23456, To: 8080, HostIP: "127.0.0.1"}},
	}
	tc := &TaskConfig{ImagePath: "vm.img", Accelerator: "kvm", DriveInterface: "virtio", GracefulShutdown: true,
		GuestAgent: true, PortMap: map[string]int{"http": 8080}, Args: []string{"-snapshot"}}
	fw, err := forwards(cfg, tc.PortMap)
	if err != nil {
		t.Fatal(err)
	}
	got := commandArgs(cfg, tc, vm{Image: "/d/a,b.img", KVM: true, Forwards: fw})
	want := []string{
		"-machine", "type=pc,accel=kvm", "-name", "vm,,1",
		"-m", "256M", "-smp", "2",
		"-drive", "file=/d/a,,b.img,if=virtio", "-nographic",
		"-qmp", "unix:qmp.sock,server=on,wait=off",
		"-chardev", "socket,path=qa.sock,server=on,wait=off,id=qga0", "-device", "virtio-serial",
		"-device", "virtserialport,chardev=qga0,name=org.qemu.guest_agent.0",
		"-netdev", "user,id=user.0,hostfwd=tcp:127.0.0.1:23456-:8080,hostfwd=udp:127.0.0.1:23456-:8080",
		"-device", "virtio-net,netdev=user.0",
		"-snapshot",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("args\n got %q\nwant %q", got, want)
	}

	// Plain: tcg, no monitor, no network of ours (qemu's default NIC).
	got = commandArgs(&drivers.TaskConfig{Name: "vm"}, &TaskConfig{DriveInterface: "ide"}, vm{Image: "/i"})
	want = []string{"-machine", "type=pc,accel=tcg", "-name", "vm", "-drive", "file=/i,if=ide", "-nographic"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("args\n got %q\nwant %q", got, want)
	}

	if _, err := forwards(cfg, map[string]int{"admin": 9000}); err == nil || !strings.Contains(err.Error(), `port_map.admin: the allocation has no port labelled "admin"`) {
		t.Fatalf("unknown label: %v", err)
	}
	cfg.Ports[0].HostIP = "::1"
	if _, err := forwards(cfg, map[string]int{"http": 80}); err == nil || !strings.Contains(err.Error(), "only from IPv4") {
		t.Fatalf("IPv6 host address: %v", err)
	}
	// A task-level network port.
	cfg2 := &drivers.TaskConfig{Resources: &structs.AllocatedTaskResources{Networks: []*structs.NetworkResource{
		{IP: "10.1.2.3", DynamicPorts: []structs.Port{{Label: "db", Value: 25000}}}}}}
	if fw, err := forwards(cfg2, map[string]int{"db": 5432}); err != nil || len(fw) != 1 || fw[0].HostIP != "10.1.2.3" || fw[0].HostPort != 25000 {
		t.Fatalf("task port: %+v, %v", fw, err)
	}
}

// In a bridge-mode group qemu runs in the allocation's namespace and
// listens on the allocation's address and each port's `to` (the host port
// when unset), where the client forwards the host port.
func TestForwardsInBridgeGroup(t *testing.T) {
	cfg := &drivers.TaskConfig{
		NetNS: "/var/run/netns/a1",
		Env:   map[string]string{"NOMAD_ALLOC_IP_http": "172.26.64.7", "NOMAD_ALLOC_IP_ssh": "172.26.64.7"},
		Ports: structs.AllocatedPorts{{Label: "http", Value: 23456, To: 8080, HostIP: "127.0.0.1"}, {Label: "ssh", Value: 23457, HostIP: "127.0.0.1"}},
	}
	fw, err := forwards(cfg, map[string]int{"http": 80, "ssh": 22})
	if err != nil {
		t.Fatal(err)
	}
	got := commandArgs(cfg, &TaskConfig{DriveInterface: "ide"}, vm{Image: "/i", Forwards: fw})
	want := "user,id=user.0,hostfwd=tcp:172.26.64.7:8080-:80,hostfwd=udp:172.26.64.7:8080-:80," +
		"hostfwd=tcp:172.26.64.7:23457-:22,hostfwd=udp:172.26.64.7:23457-:22"
	if i := indexOf(got, "-netdev"); i < 0 || got[i+1] != want {
		t.Fatalf("args %q, want -netdev %s", got, want)
	}
	delete(cfg.Env, "NOMAD_ALLOC_IP_ssh")
	if _, err := forwards(cfg, map[string]int{"ssh": 22}); err == nil || !strings.Contains(err.Error(), "port_map.ssh: the allocation's IPv4 address in its bridge network is unknown") {
		t.Fatalf("no allocation address: %v", err)
	}
	if _, err := forwards(cfg, map[string]int{"admin": 22}); err == nil || !strings.Contains(err.Error(), `no port labelled "admin"`) {
		t.Fatalf("unknown label: %v", err)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
