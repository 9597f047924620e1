package taskenv

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

var update = flag.Bool("update", false, "rewrite golden files")

func input() Input {
	job := &structs.Job{
		ID: "web-job/dispatch-1", Name: "web-job", ParentID: "web-job", Namespace: "prod", Region: "global",
		Meta: map[string]string{"owner": "job", "tier": "job"},
		TaskGroups: []*structs.TaskGroup{
			{Name: "other", Meta: map[string]string{"tier": "wrong-group"}},
			{Name: "frontend", Meta: map[string]string{"tier": "group", "zone": "a"}},
		},
	}
	task := &structs.Task{
		Name: "nginx", Driver: "raw_exec",
		Meta: map[string]string{"zone": "task", "Mixed.Key": "m"},
		Env: map[string]string{
			"PATH":     "/opt/bin:/usr/bin",
			"LISTEN":   "${NOMAD_ADDR_http}",
			"NODE":     "${node.unique.name}/${node.unique.id}/${node.datacenter}/${node.class}/${node.pool}/${node.region}",
			"ATTR":     "${attr.kernel.name}-${meta.rack}",
			"ENV_REF":  `${env["NOMAD_TASK_NAME"]}`,
			"UNKNOWN":  "${attr.nope} ${foo.bar} ${NOMAD_NOPE}",
			"UNCLOSED": "x${NOMAD_TASK_NAME",
		},
		Resources: &structs.Resources{CPU: 1, MemoryMB: 1},
	}
	return Input{
		Alloc: &structs.Allocation{
			ID: "0123456789abcdef-0000-0000-000000000000", Name: "web-job.frontend[3]",
			Namespace: "prod", JobID: job.ID, Job: job, TaskGroup: "frontend",
			AllocatedResources: &structs.AllocatedResources{
				Tasks: map[string]*structs.AllocatedTaskResources{
					"nginx": {
						Cpu:    structs.AllocatedCpuResources{CpuShares: 500, ReservedCores: []uint16{3, 1}},
						Memory: structs.AllocatedMemoryResources{MemoryMB: 256, MemoryMaxMB: 512},
					},
				},
				Shared: structs.AllocatedSharedResources{Ports: structs.AllocatedPorts{
					{Label: "http", Value: 23456, To: 8080, HostIP: "10.0.0.5"},
					{Label: "admin", Value: 23457, HostIP: "10.0.0.5"},
					{Label: "v6", Value: 30000, HostIP: "fe80::1"},
				}},
			},
		},
		Task: task,
		Node: &structs.Node{
			ID: "node-uuid", Name: "worker-1", Datacenter: "dc1", NodeClass: "edge", NodePool: "default",
			Attributes: map[string]string{"kernel.name": "linux"},
			Meta:       map[string]string{"rack": "r42"},
		},
		Region:   "global",
		AllocDir: "/var/drover/alloc/0123456789abcdef",
		TaskDir:  "/var/drover/alloc/0123456789abcdef/nginx",
	}
}

func TestBuildGolden(t *testing.T) {
	got := Build(input())
	path := filepath.Join("testdata", "env.golden.json")
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s = %q", k, got[k])
		}
	}
}

func TestDefaultPath(t *testing.T) {
	in := input()
	delete(in.Task.Env, "PATH")
	t.Setenv("PATH", "/host/bin")
	if got := Build(in)["PATH"]; got != "/host/bin" {
		t.Errorf("PATH %q, want the agent's", got)
	}
	t.Setenv("PATH", "")
	if got := Build(in)["PATH"]; got != DefaultPath {
		t.Errorf("PATH %q, want default", got)
	}
}

func TestFallsBackToTaskResources(t *testing.T) {
	in := input()
	in.Alloc.AllocatedResources.Tasks = nil
	in.Task.Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
	env := Build(in)
	if env["NOMAD_CPU_LIMIT"] != "100" || env["NOMAD_MEMORY_LIMIT"] != "64" {
		t.Errorf("cpu %q mem %q", env["NOMAD_CPU_LIMIT"], env["NOMAD_MEMORY_LIMIT"])
	}
	if _, ok := env["NOMAD_MEMORY_MAX_LIMIT"]; ok {
		t.Error("NOMAD_MEMORY_MAX_LIMIT set without memory_max")
	}
}

func TestInterpolateConfig(t *testing.T) {
	e := New(input())
	cfg := map[string]any{
		"command": "${NOMAD_TASK_DIR}/bin/server",
		"args":    []any{"-port", "${NOMAD_PORT_http}", 7, true},
		"strs":    []string{"${node.datacenter}"},
		"nested":  map[string]any{"deep": []any{map[string]any{"x": "${meta.rack}"}}},
		"labels":  map[string]string{"a": "${NOMAD_ALLOC_INDEX}"},
		"n":       3,
	}
	got := e.InterpolateConfig(cfg)
	want := map[string]any{
		"command": "/var/drover/alloc/0123456789abcdef/nginx/local/bin/server",
		"args":    []any{"-port", "8080", 7, true},
		"strs":    []string{"dc1"},
		"nested":  map[string]any{"deep": []any{map[string]any{"x": "r42"}}},
		"labels":  map[string]string{"a": "3"},
		"n":       3,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	if cfg["command"] != "${NOMAD_TASK_DIR}/bin/server" {
		t.Error("input config was modified")
	}
	if got := e.Interpolate("${LISTEN} $${x} ${ env[\"NODE\"] }"); got != "10.0.0.5:23456 $${x} worker-1/node-uuid/dc1/edge/default/global" {
		t.Errorf("Interpolate: %q", got)
	}
}
