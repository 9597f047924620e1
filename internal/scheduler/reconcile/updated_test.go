package reconcile

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/nomad/api"
)

func strp(s string) *string { return &s }

// updJob is a job with every block TasksUpdated looks at filled in, so each
// case below changes one thing against a realistic baseline.
func updJob() *structs.Job {
	sd := 5 * time.Second
	return &structs.Job{
		ID: "web", Namespace: "default", Type: "service", Priority: 50,
		Meta: map[string]string{"owner": "team-a"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Count: 3,
			EphemeralDisk: &structs.EphemeralDisk{SizeMB: 300},
			Networks: []*structs.NetworkResource{{
				Mode: "bridge", Hostname: "h",
				DNS:           &structs.DNSConfig{Servers: []string{"1.1.1.1"}},
				CNI:           &structs.CNIConfig{Args: map[string]string{"a": "1"}},
				ReservedPorts: []structs.Port{{Label: "admin", Value: 9000}},
				DynamicPorts:  []structs.Port{{Label: "http", To: 8080}},
			}},
			Consul:   &structs.Consul{Namespace: "ns"},
			Services: []*structs.Service{{Name: "api", PortLabel: "http", Tags: []string{"v1"}, Connect: &api.ConsulConnect{Native: true}}},
			Volumes:  map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "host", Source: "data"}},
			RestartPolicy: &structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second,
				Mode: "fail"},
			ReschedulePolicy: &structs.ReschedulePolicy{Unlimited: true, Delay: 30 * time.Second, DelayFunction: "exponential"},
			Update:           &structs.UpdateStrategy{MaxParallel: new(1)},
			Meta:             map[string]string{"tier": "web"},
			ShutdownDelay:    &sd,
			Tasks: []*structs.Task{{
				Name: "web", Driver: "raw_exec", User: "nobody",
				Config: map[string]any{"command": "/bin/sleep", "args": []any{"100"}, "port": 8080},
				Env:    map[string]string{"A": "1"},
				Artifacts: []*structs.TaskArtifact{{GetterSource: strp("https://example.com/x.tgz"),
					RelativeDest: strp("local/")}},
				Templates:    []*structs.Template{{EmbeddedTmpl: strp("x"), DestPath: strp("local/x")}},
				VolumeMounts: []*structs.VolumeMount{{Volume: strp("data"), Destination: strp("/data")}},
				Meta:         map[string]string{"role": "frontend"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 128,
					Networks: []*structs.NetworkResource{{MBits: 10, DynamicPorts: []structs.Port{{Label: "legacy"}}}}},
				Identities:  []*structs.WorkloadIdentity{{Name: "vault", Audience: []string{"vault.io"}}},
				LogConfig:   &structs.LogConfig{MaxFiles: 10, MaxFileSizeMB: 10},
				KillTimeout: 5 * time.Second,
				KillSignal:  "SIGINT",
				Services:    []*structs.Service{{Name: "web", PortLabel: "http", Tags: []string{"a"}}},
			}, {
				Name: "side", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
			}},
		}},
	}
}

func TestTasksUpdated(t *testing.T) {
	task := func(j *structs.Job) *structs.Task { return j.TaskGroups[0].Tasks[0] }
	group := func(j *structs.Job) *structs.TaskGroup { return j.TaskGroups[0] }
	cases := []struct {
		name   string
		change func(j *structs.Job)
		reason string // "" = in place
	}{
		{"nothing", func(j *structs.Job) {}, ""},

		// Destructive: group level.
		{"task added", func(j *structs.Job) {
			group(j).Tasks = append(group(j).Tasks, &structs.Task{Name: "extra", Driver: "raw_exec"})
		}, "number of tasks changed (2 to 3)"},
		{"task renamed", func(j *structs.Job) { group(j).Tasks[1].Name = "other" }, `task "side" removed`},
		{"ephemeral disk", func(j *structs.Job) { group(j).EphemeralDisk.SizeMB = 500 }, "ephemeral disk changed"},
		{"ephemeral disk sticky", func(j *structs.Job) { group(j).EphemeralDisk.Sticky = true }, "ephemeral disk changed"},
		{"network mode", func(j *structs.Job) { group(j).Networks[0].Mode = "host" }, "group network mode changed"},
		{"network added", func(j *structs.Job) {
			group(j).Networks = append(group(j).Networks, &structs.NetworkResource{Mode: "host"})
		}, "group network count changed"},
		{"network hostname", func(j *structs.Job) { group(j).Networks[0].Hostname = "h2" }, "group network hostname changed"},
		{"network dns", func(j *structs.Job) { group(j).Networks[0].DNS.Servers = []string{"8.8.8.8"} }, "group network dns changed"},
		{"network cni args", func(j *structs.Job) { group(j).Networks[0].CNI.Args["a"] = "2" }, "group network cni changed"},
		{"static port value", func(j *structs.Job) { group(j).Networks[0].ReservedPorts[0].Value = 9001 }, "group network ports changed"},
		{"dynamic port to", func(j *structs.Job) { group(j).Networks[0].DynamicPorts[0].To = 9090 }, "group network ports changed"},
		{"dynamic port added", func(j *structs.Job) {
			group(j).Networks[0].DynamicPorts = append(group(j).Networks[0].DynamicPorts, structs.Port{Label: "metrics"})
		}, "group network ports changed"},
		{"dynamic port becomes static", func(j *structs.Job) {
			n := group(j).Networks[0]
			n.ReservedPorts = append(n.ReservedPorts, structs.Port{Label: "http", Value: 8080, To: 8080})
			n.DynamicPorts = nil
		}, "group network ports changed"},
		{"group consul", func(j *structs.Job) { group(j).Consul.Namespace = "other" }, "group consul changed"},
		{"connect changed", func(j *structs.Job) {
			group(j).Services[0].Connect = &api.ConsulConnect{SidecarService: &api.ConsulSidecarService{Port: "x"}}
		}, `connect service "api" changed`},
		{"connect port", func(j *structs.Job) { group(j).Services[0].PortLabel = "admin" }, `connect service "api" port changed`},
		{"connect removed", func(j *structs.Job) { group(j).Services[0].Connect = nil }, `connect service "api" removed`},
		{"group volumes", func(j *structs.Job) { group(j).Volumes["data"].ReadOnly = true }, "group volumes changed"},
		{"group render_templates", func(j *structs.Job) { group(j).RestartPolicy.RenderTemplates = true }, "group restart render_templates changed"},

		// Destructive: task level.
		{"driver", func(j *structs.Job) { task(j).Driver = "exec" }, `task "web" driver changed`},
		{"user", func(j *structs.Job) { task(j).User = "root" }, `task "web" user changed`},
		{"config value", func(j *structs.Job) { task(j).Config["command"] = "/bin/cat" }, `task "web" config changed`},
		{"config nested", func(j *structs.Job) { task(j).Config["args"] = []any{"200"} }, `task "web" config changed`},
		{"config number", func(j *structs.Job) { task(j).Config["port"] = 8081.0 }, `task "web" config changed`},
		{"config key added", func(j *structs.Job) { task(j).Config["cwd"] = "/tmp" }, `task "web" config changed`},
		{"env", func(j *structs.Job) { task(j).Env["A"] = "2" }, `task "web" env changed`},
		{"env empty value added", func(j *structs.Job) { task(j).Env["B"] = "" }, `task "web" env changed`},
		{"artifacts", func(j *structs.Job) { task(j).Artifacts[0].GetterSource = strp("https://example.com/y.tgz") }, `task "web" artifacts changed`},
		{"vault", func(j *structs.Job) { task(j).Vault = &structs.Vault{Role: "r"} }, `task "web" vault changed`},
		{"secrets", func(j *structs.Job) { task(j).Secrets = []*structs.Secret{{Name: "s", Provider: "nomad"}} }, `task "web" secrets changed`},
		{"task consul", func(j *structs.Job) { task(j).Consul = &structs.Consul{Cluster: "c2"} }, `task "web" consul changed`},
		{"templates", func(j *structs.Job) { task(j).Templates[0].EmbeddedTmpl = strp("y") }, `task "web" templates changed`},
		{"template change mode", func(j *structs.Job) { task(j).Templates[0].ChangeMode = strp("noop") }, `task "web" templates changed`},
		{"task render_templates", func(j *structs.Job) {
			task(j).RestartPolicy = &structs.RestartPolicy{RenderTemplates: true}
		}, `task "web" restart render_templates changed`},
		{"csi plugin", func(j *structs.Job) {
			task(j).CSIPluginConfig = &structs.TaskCSIPluginConfig{ID: "p", Type: "node"}
		}, `task "web" csi_plugin changed`},
		{"volume mount", func(j *structs.Job) { task(j).VolumeMounts[0].Destination = strp("/srv") }, `task "web" volume mounts changed`},
		{"task meta", func(j *structs.Job) { task(j).Meta["role"] = "backend" }, `task "web" meta changed`},
		{"group meta", func(j *structs.Job) { group(j).Meta["tier"] = "api" }, `task "web" meta changed`},
		{"job meta", func(j *structs.Job) { j.Meta["owner"] = "team-b" }, `task "web" meta changed`},
		{"job meta added", func(j *structs.Job) { j.Meta["new"] = "x" }, `task "web" meta changed`},
		{"task network mbits", func(j *structs.Job) { task(j).Resources.Networks[0].MBits = 20 }, `task "web" network mbits changed`},
		{"task network port", func(j *structs.Job) {
			task(j).Resources.Networks[0].DynamicPorts[0].Label = "other"
		}, `task "web" network ports changed`},
		{"cpu", func(j *structs.Job) { task(j).Resources.CPU = 200 }, `task "web" resources cpu changed`},
		{"cores", func(j *structs.Job) { task(j).Resources.Cores = 1 }, `task "web" resources cores changed`},
		{"memory", func(j *structs.Job) { task(j).Resources.MemoryMB = 256 }, `task "web" resources memory changed`},
		{"memory_max", func(j *structs.Job) { task(j).Resources.MemoryMaxMB = 512 }, `task "web" resources memory_max changed`},
		{"devices", func(j *structs.Job) {
			task(j).Resources.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: new(uint64(1))}}
		}, `task "web" resources devices changed`},
		{"numa", func(j *structs.Job) { task(j).Resources.NUMA = &structs.NUMAResource{Affinity: "require"} }, `task "web" resources numa changed`},
		{"identities", func(j *structs.Job) { task(j).Identities[0].Audience = []string{"other"} }, `task "web" identities changed`},
		{"default identity", func(j *structs.Job) { task(j).Identity = &structs.WorkloadIdentity{Env: true} }, `task "web" identities changed`},
		{"logs disabled", func(j *structs.Job) { task(j).LogConfig.Disabled = true }, `task "web" logs disabled changed`},

		// In place.
		{"count", func(j *structs.Job) { group(j).Count = 7 }, ""},
		{"update block", func(j *structs.Job) { group(j).Update.MaxParallel = new(2) }, ""},
		{"reschedule block", func(j *structs.Job) { group(j).ReschedulePolicy.Delay = time.Minute }, ""},
		{"migrate block", func(j *structs.Job) { group(j).Migrate = &structs.MigrateStrategy{MaxParallel: new(3)} }, ""},
		{"restart attempts", func(j *structs.Job) { group(j).RestartPolicy.Attempts = 5 }, ""},
		{"task restart attempts", func(j *structs.Job) { task(j).RestartPolicy = &structs.RestartPolicy{Attempts: 9} }, ""},
		{"priority", func(j *structs.Job) { j.Priority = 80 }, ""},
		{"job constraint", func(j *structs.Job) {
			j.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}}
		}, ""},
		{"group affinity", func(j *structs.Job) {
			group(j).Affinities = []*structs.Affinity{{LTarget: "${node.datacenter}", RTarget: "dc1", Operand: "="}}
		}, ""},
		{"task constraint", func(j *structs.Job) {
			task(j).Constraints = []*structs.Constraint{{LTarget: "${attr.os.name}", RTarget: "ubuntu", Operand: "="}}
		}, ""},
		{"spread", func(j *structs.Job) { j.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}"}} }, ""},
		{"group shutdown_delay", func(j *structs.Job) { d := time.Minute; group(j).ShutdownDelay = &d }, ""},
		{"task shutdown_delay", func(j *structs.Job) { task(j).ShutdownDelay = time.Minute }, ""},
		{"max_run_duration", func(j *structs.Job) { d := time.Hour; group(j).MaxRunDuration = &d }, ""},
		{"scaling", func(j *structs.Job) {
			group(j).Scaling = &structs.ScalingPolicy{Min: new(int64(1)), Max: new(int64(10))}
		}, ""},
		{"kill_timeout", func(j *structs.Job) { task(j).KillTimeout = time.Minute }, ""},
		{"kill_signal", func(j *structs.Job) { task(j).KillSignal = "SIGTERM" }, ""},
		{"service tags", func(j *structs.Job) { task(j).Services[0].Tags = []string{"b"} }, ""},
		{"group service tags", func(j *structs.Job) { group(j).Services[0].Tags = []string{"v2"} }, ""},
		{"non-connect service added", func(j *structs.Job) {
			group(j).Services = append(group(j).Services, &structs.Service{Name: "metrics", PortLabel: "http"})
		}, ""},
		{"log rotation", func(j *structs.Job) { task(j).LogConfig.MaxFiles = 3 }, ""},
		{"disconnect block", func(j *structs.Job) {
			group(j).Disconnect = &structs.DisconnectStrategy{LostAfter: new(time.Minute)}
		}, ""},
		{"datacenters", func(j *structs.Job) { j.Datacenters = []string{"dc2"} }, ""},
		{"meta moved from group to every task", func(j *structs.Job) {
			delete(group(j).Meta, "tier")
			for _, t := range group(j).Tasks {
				if t.Meta == nil {
					t.Meta = map[string]string{}
				}
				t.Meta["tier"] = "web"
			}
		}, ""},
		{"meta moved from one task to group reaches the other", func(j *structs.Job) {
			delete(task(j).Meta, "role")
			group(j).Meta["role"] = "frontend"
		}, `task "side" meta changed`},
		{"dynamic port value only", func(j *structs.Job) { group(j).Networks[0].DynamicPorts[0].Value = 23456 }, ""},
		{"config int as float", func(j *structs.Job) { task(j).Config["port"] = 8080.0 }, ""},
		{"config int as int64", func(j *structs.Job) { task(j).Config["port"] = int64(8080) }, ""},
		{"config list type", func(j *structs.Job) { task(j).Config["args"] = []string{"100"} }, ""},

		// nil and empty are the same.
		{"env nil vs empty", func(j *structs.Job) { group(j).Tasks[1].Env = map[string]string{} }, ""},
		{"config empty list added", func(j *structs.Job) { group(j).Tasks[1].Config["args"] = []any{} }, ""},
		{"meta nil vs empty", func(j *structs.Job) { group(j).Tasks[1].Meta = map[string]string{} }, ""},
		{"artifacts nil vs empty", func(j *structs.Job) { group(j).Tasks[1].Artifacts = []*structs.TaskArtifact{} }, ""},
		{"templates nil vs empty", func(j *structs.Job) { group(j).Tasks[1].Templates = []*structs.Template{} }, ""},
		{"volume mounts nil vs empty", func(j *structs.Job) { group(j).Tasks[1].VolumeMounts = []*structs.VolumeMount{} }, ""},
		{"identities nil vs empty", func(j *structs.Job) { group(j).Tasks[1].Identities = []*structs.WorkloadIdentity{} }, ""},
		{"secrets nil vs empty", func(j *structs.Job) { group(j).Tasks[1].Secrets = []*structs.Secret{} }, ""},
		{"group volumes removed", func(j *structs.Job) { group(j).Volumes = nil }, "group volumes changed"},
		{"resources nil vs empty", func(j *structs.Job) { group(j).Tasks[1].Resources = &structs.Resources{} }, ""},
		{"log config nil vs empty", func(j *structs.Job) { group(j).Tasks[1].LogConfig = &structs.LogConfig{} }, ""},
		{"vault nil vs empty", func(j *structs.Job) { group(j).Tasks[1].Vault = &structs.Vault{} }, ""},
		{"cni args removed", func(j *structs.Job) { group(j).Networks[0].CNI = &structs.CNIConfig{} }, "group network cni changed"},
		{"cni nil vs empty args", func(j *structs.Job) {
			group(j).Networks[0].DNS = &structs.DNSConfig{Servers: []string{"1.1.1.1"}, Options: []string{}}
		}, ""},
		{"job meta moved to group", func(j *structs.Job) {
			j.Meta = nil
			group(j).Meta["owner"] = "team-a"
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldJob, newJob := updJob(), updJob()
			tc.change(newJob)
			destructive, reason := TasksUpdated(oldJob, newJob, "g")
			if destructive != (tc.reason != "") || reason != tc.reason {
				t.Fatalf("TasksUpdated = (%v, %q), want (%v, %q)", destructive, reason, tc.reason != "", tc.reason)
			}
			// The comparison is symmetric: undoing the change is the same kind of update.
			back, _ := TasksUpdated(newJob, oldJob, "g")
			if back != destructive {
				t.Fatalf("reverse TasksUpdated = %v, want %v", back, destructive)
			}
		})
	}
}

// A job stored through Raft comes back with msgpack's types (int64 for
// numbers in a task config, nil for empty maps): that is not a change.
func TestTasksUpdatedAfterStoreRoundTrip(t *testing.T) {
	j := updJob()
	j.TaskGroups[0].Tasks[1].Env = map[string]string{}
	stored := j.Copy()
	if d, why := TasksUpdated(j, stored, "g"); d {
		t.Fatalf("a stored copy of the same job is destructive: %s", why)
	}
}

func TestTasksUpdatedGroupPresence(t *testing.T) {
	j := updJob()
	if d, why := TasksUpdated(j, j, "missing"); d || why != "" {
		t.Fatalf("group absent from both: (%v, %q)", d, why)
	}
	other := updJob()
	other.TaskGroups[0].Name = "h"
	if d, why := TasksUpdated(j, other, "g"); !d || !strings.Contains(why, `group "g" removed`) {
		t.Fatalf("group removed: (%v, %q)", d, why)
	}
	if d, why := TasksUpdated(other, j, "g"); !d || !strings.Contains(why, `group "g" added`) {
		t.Fatalf("group added: (%v, %q)", d, why)
	}
}
