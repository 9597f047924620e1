package unsupported_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/apiconv"
	"github.com/drover-project/drover/internal/drivers/catalog"
	"github.com/drover-project/drover/internal/structs/unsupported"
)

// gapJob is a plain service job as a user submits it (not canonicalized):
// nothing in it may be refused or warned about, even after the api client's
// Canonicalize has filled update, migrate, reschedule and restart defaults.
func gapJob(typ string) *api.Job {
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []any{"60"})
	tg := api.NewTaskGroup("web", 2).AddTask(task)
	tg.Networks = []*api.NetworkResource{{Mode: "host", DynamicPorts: []api.Port{{Label: "http"}}}}
	j := &api.Job{ID: new("web"), Type: new(typ)}
	return j.AddTaskGroup(tg)
}

func checkGaps(t *testing.T, j *api.Job) unsupported.Gaps {
	t.Helper()
	sj := apiconv.ApiJobToStructJob(j)
	sj.Canonicalize()
	if err := sj.Validate(); err != nil {
		t.Fatalf("the test job itself is invalid: %v", err)
	}
	return unsupported.Check(sj, catalog.Builtin)
}

func TestCheck_PlainJobsHaveNoGaps(t *testing.T) {
	for _, typ := range []string{"service", "batch", "system", "sysbatch"} {
		j := gapJob(typ)
		if typ == "system" || typ == "sysbatch" {
			j.TaskGroups[0].Count = new(1)
		}
		g := checkGaps(t, j)
		if len(g.Refused)+len(g.Warnings) != 0 {
			t.Errorf("%s job: want no gaps, got refused %q, warnings %q", typ, g.Refused, g.Warnings)
		}
	}
}

// A raw_exec group in bridge mode is accepted as it is.
func TestCheck_BridgeRawExecHasNoGaps(t *testing.T) {
	j := gapJob("service")
	j.TaskGroups[0].Networks[0].Mode = "bridge"
	j.TaskGroups[0].Networks[0].DynamicPorts[0].To = 8080
	if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
		t.Fatalf("want no gaps, got refused %q, warnings %q", g.Refused, g.Warnings)
	}
}

// Docker, podman and qemu groups in bridge mode are accepted: docker
// tasks join the allocation's pause container, podman's its namespace by
// path, qemu runs in it as raw_exec tasks do.
func TestCheck_BridgeContainersAndVMsHaveNoGaps(t *testing.T) {
	for driver, conf := range map[string]map[string]any{
		"docker": {"image": "busybox"}, "podman": {"image": "busybox"},
		"qemu": {"image_path": "local/disk.img", "port_map": map[string]any{"http": 80}},
	} {
		j := gapJob("service")
		j.TaskGroups[0].Networks[0].Mode = "bridge"
		j.TaskGroups[0].Networks[0].DynamicPorts[0].To = 8080
		task := j.TaskGroups[0].Tasks[0]
		task.Driver = driver
		task.Config = conf
		if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
			t.Fatalf("%s: want no gaps, got refused %q, warnings %q", driver, g.Refused, g.Warnings)
		}
	}
}

func TestCheck_Decisions(t *testing.T) {
	task := func(j *api.Job) *api.Task { return j.TaskGroups[0].Tasks[0] }
	tg := func(j *api.Job) *api.TaskGroup { return j.TaskGroups[0] }
	const tp = `Task group "web", task "server": `
	const gp = `Task group "web": `
	cases := []struct {
		name    string
		mutate  func(j *api.Job)
		refused string // the message wanted among the refusals, or
		warning string // among the warnings
	}{
		// Refused: running without them breaks the task or is unsafe.
		{"template with a Consul function", func(j *api.Job) {
			task(j).Templates = []*api.Template{{EmbeddedTmpl: new(`{{ with nomadVar "x" }}{{ .a }}{{ end }}{{ range service "db" }}{{ .Address }}{{ end }}`), DestPath: new("local/app.conf")}}
		}, tp + `template "local/app.conf" function "service" (Consul) is not supported by Drover yet: Drover has no Consul or Vault integration`, ""},
		{"template with a Vault function and other delimiters", func(j *api.Job) {
			task(j).Templates = []*api.Template{{EmbeddedTmpl: new(`[[ with secret "kv/x" ]][[ .Data.a ]][[ end ]]`), LeftDelim: new("[["), RightDelim: new("]]"), DestPath: new("secrets/x")}}
		}, tp + `template "secrets/x" function "secret" (Vault) is not supported by Drover yet`, ""},
		{"artifact hg", func(j *api.Job) {
			task(j).Artifacts = []*api.TaskArtifact{{GetterSource: new("hg::https://example.com/repo")}}
		}, tp + `artifact "hg::https://example.com/repo" (source scheme "hg") is not supported by Drover yet: Drover fetches artifacts over http, https, git and from local files only`, ""},
		{"artifact git sshkey", func(j *api.Job) {
			task(j).Artifacts = []*api.TaskArtifact{{GetterSource: new("git::git@example.com:org/repo.git"), GetterOptions: map[string]string{"sshkey": "a2V5"}}}
		}, tp + `artifact "git::git@example.com:org/repo.git" (git option "sshkey") is not supported by Drover yet: Drover clones with the client's own git and ssh configuration`, ""},
		{"artifact s3", func(j *api.Job) {
			task(j).Artifacts = []*api.TaskArtifact{{GetterSource: new("s3://bucket/app.tgz")}}
		}, tp + `artifact "s3://bucket/app.tgz" (source scheme "s3") is not supported`, ""},
		{"artifact xz", func(j *api.Job) {
			task(j).Artifacts = []*api.TaskArtifact{{GetterSource: new("https://example.com/app.tar.xz")}}
		}, tp + `artifact "https://example.com/app.tar.xz" (archive type "tar.xz") is not supported by Drover yet: Drover has no xz decompressor`, ""},
		{"csi volume", func(j *api.Job) {
			tg(j).Volumes = map[string]*api.VolumeRequest{"data": {Name: "data", Type: "csi", Source: "ebs0"}}
		}, gp + `volume "data" (type = "csi") is not supported`, ""},
		{"vault", func(j *api.Job) { task(j).Vault = &api.Vault{Role: "app"} }, tp + `vault is not supported`, ""},
		{"task consul", func(j *api.Job) { task(j).Consul = &api.Consul{} }, tp + `consul is not supported`, ""},
		{"group consul", func(j *api.Job) { tg(j).Consul = &api.Consul{} }, gp + `consul is not supported`, ""},
		{"csi_plugin", func(j *api.Job) {
			task(j).CSIPluginConfig = &api.TaskCSIPluginConfig{ID: "ebs", Type: "node", MountDir: "/csi"}
		}, tp + `csi_plugin is not supported`, ""},
		{"secret", func(j *api.Job) {
			task(j).Secrets = []*api.Secret{{Name: "db", Provider: "nomad", Path: "db"}}
		}, tp + `secret "db" is not supported`, ""},
		{"mock driver in bridge", func(j *api.Job) {
			tg(j).Networks[0].Mode = "bridge"
			task(j).Driver = "mock_driver"
			task(j).Config = map[string]any{}
		}, tp + `driver "mock_driver" in a bridge network is not supported`, ""},
		{"cni network", func(j *api.Job) { tg(j).Networks[0].Mode = "cni/mynet" }, gp + `network[0] mode "cni/mynet" is not supported`, ""},
		{"no network", func(j *api.Job) { tg(j).Networks[0].Mode = "none" }, gp + `network[0] mode "none" is not supported`, ""},
		{"host_network", func(j *api.Job) { tg(j).Networks[0].DynamicPorts[0].HostNetwork = "private" },
			gp + `network[0] port "http" host_network "private" is not supported`, ""},
		{"task network", func(j *api.Job) {
			task(j).Resources = &api.Resources{Networks: []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "x"}}}}}
		}, tp + `resources.network is not supported`, ""},
		{"numa", func(j *api.Job) {
			task(j).Resources = &api.Resources{NUMA: &api.NUMAResource{Affinity: "require"}}
		}, tp + `resources.numa is not supported`, ""},
		{"user", func(j *api.Job) {
			task(j).Driver = "mock_driver"
			task(j).Config = map[string]any{}
			task(j).User = "nobody"
		},
			tp + `user "nobody" is not supported by Drover yet: this driver runs every task as the agent's user`, ""},
		{"identity filepath", func(j *api.Job) { task(j).Identity = &api.WorkloadIdentity{File: true, Filepath: "local/tok"} }, tp + `identity filepath is not supported`, ""},
		{"identities filepath", func(j *api.Job) {
			task(j).Identities = []*api.WorkloadIdentity{{Name: "aws", Audience: []string{"sts"}, File: true, Filepath: "local/aws"}}
		}, tp + `identity "aws" filepath is not supported`, ""},
		{"connect", func(j *api.Job) {
			tg(j).Services = []*api.Service{{Name: "api", PortLabel: "http", Connect: &api.ConsulConnect{Native: true}}}
		}, gp + `service "api" connect is not supported`, ""},
		{"connect task kind", func(j *api.Job) { task(j).Kind = "connect-proxy:api" }, tp + `kind "connect-proxy:api" is not supported`, ""},
		{"schedule", func(j *api.Job) {
			task(j).Schedule = &api.TaskSchedule{Cron: &api.TaskScheduleCron{Start: "0 9 * * *", End: "0 17", Timezone: "UTC"}}
		},
			tp + `schedule is not supported`, ""},
		{"multiregion", func(j *api.Job) { j.Multiregion = &api.Multiregion{} }, `Job "web": multiregion is not supported`, ""},
		{"raw_exec unknown option", func(j *api.Job) { task(j).Config["oom_score_adj"] = 500 },
			tp + `driver "raw_exec" config: oom_score_adj is not supported by Drover's raw_exec yet`, ""},
		{"raw_exec typo", func(j *api.Job) { task(j).Config["comand"] = "/bin/true" },
			tp + `driver "raw_exec" config: unknown key "comand"`, ""},
		{"raw_exec without command", func(j *api.Job) { delete(task(j).Config, "command") },
			tp + `driver "raw_exec" config: "command" is required`, ""},
		{"raw_exec args of the wrong type", func(j *api.Job) { task(j).Config["args"] = "60" },
			tp + `driver "raw_exec" config: args must be a list of strings`, ""},
		{"mock_driver unknown option", func(j *api.Job) { task(j).Driver = "mock_driver"; task(j).Config = map[string]any{"kill_after": "1s"} },
			tp + `driver "mock_driver" config: unknown key "kill_after"`, ""},

		// Warned: the job runs, without them.
		{"nomad service with a script check", func(j *api.Job) {
			tg(j).Services = []*api.Service{{Name: "api", PortLabel: "http", Provider: "nomad",
				Checks: []api.ServiceCheck{{Name: "s", Type: "script", Command: "/bin/true", Interval: time.Second, Timeout: time.Second}}}}
		}, gp + `service "api" check "s" of type "script" is not supported by Drover yet: the nomad service provider runs only http and tcp checks`, ""},
		{"consul service on a task", func(j *api.Job) { task(j).Services = []*api.Service{{Name: "api", PortLabel: "http"}} },
			"", tp + `service "api" is accepted but not acted on by Drover yet: Drover has no Consul integration, so it is not registered in Consul (provider "consul")`},
		{"network dns", func(j *api.Job) { tg(j).Networks[0].DNS = &api.DNSConfig{Servers: []string{"1.1.1.1"}} }, "", gp + `network[0] dns is accepted`},
		{"network mbits", func(j *api.Job) { tg(j).Networks[0].MBits = new(100) }, "", gp + `network[0] mbits is accepted`},
		{"ignore_collision", func(j *api.Job) { tg(j).Networks[0].DynamicPorts[0].IgnoreCollision = true }, "", gp + `network[0] port "http" ignore_collision is accepted`},
		{"identity change_mode", func(j *api.Job) {
			task(j).Identities = []*api.WorkloadIdentity{{Name: "aws", Audience: []string{"sts"}, File: true, ChangeMode: "restart"}}
		}, "", tp + `identity "aws" change_mode is accepted but not acted on by Drover yet: a renewed token is rewritten in place`},
		{"task disk", func(j *api.Job) { task(j).Resources = &api.Resources{DiskMB: new(100)} }, "", tp + `resources.disk is accepted`},
		{"action", func(j *api.Job) { task(j).Actions = []*api.Action{{Name: "dump", Command: "/bin/true"}} }, "", tp + `action "dump" is accepted`},
		{"vertical scaling", func(j *api.Job) {
			task(j).ScalingPolicies = []*api.ScalingPolicy{{Type: "vertical_cpu", Max: new(int64(500))}}
		},
			"", tp + `scaling is accepted but not acted on by Drover yet: the policy is served at /v1/scaling/policies`},
		{"consul_namespace", func(j *api.Job) { j.ConsulNamespace = new("team") }, "", `Job "web": consul_namespace is accepted`},
		{"driver not built", func(j *api.Job) { task(j).Driver = "lxc"; task(j).Config = map[string]any{"image": "redis"} },
			"", tp + `driver "lxc" is not built into Drover, so no node can run this task`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := gapJob("service")
			tc.mutate(j)
			g := checkGaps(t, j)
			want, got, other := tc.refused, g.Refused, g.Warnings
			if want == "" {
				want, got, other = tc.warning, g.Warnings, g.Refused
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], want) {
				t.Errorf("want exactly one message starting\n  %s\ngot %q", want, got)
			}
			if len(other) != 0 {
				t.Errorf("want nothing else, got %q", other)
			}
		})
	}
}

// raw_exec runs the task as its user (or refuses it on the node, saying
// why): no refusal at submit.
// http, https and local artifacts are fetched: no gap.
func TestCheck_HTTPArtifactsAccepted(t *testing.T) {
	for _, src := range []string{"https://example.com/app.tgz", "http://example.com/bin?archive=false", "local/app.zip", "file:///opt/app.tar.bz2", "git::https://example.com/repo.git?ref=v1"} {
		j := gapJob("service")
		j.TaskGroups[0].Tasks[0].Artifacts = []*api.TaskArtifact{{GetterSource: new(src), GetterOptions: map[string]string{"checksum": "md5:d41d8cd98f00b204e9800998ecf8427e"}}}
		if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
			t.Errorf("%s: want no gaps, got refused %q, warnings %q", src, g.Refused, g.Warnings)
		}
	}
}

func TestRawExecTaskUserAccepted(t *testing.T) {
	j := gapJob("service")
	j.TaskGroups[0].Tasks[0].User = "nobody"
	if g := checkGaps(t, j); len(g.Refused) != 0 {
		t.Fatalf("a raw_exec task with a user was refused: %q", g.Refused)
	}
}

// docker runs the container as the task's user: no refusal.
func TestDockerTaskUserAccepted(t *testing.T) {
	j := gapJob("service")
	j.TaskGroups[0].Tasks[0].Driver = "docker"
	j.TaskGroups[0].Tasks[0].Config = map[string]any{"image": "redis"}
	j.TaskGroups[0].Tasks[0].User = "nobody"
	if g := checkGaps(t, j); len(g.Refused) != 0 {
		t.Fatalf("a docker task with a user was refused: %q", g.Refused)
	}
}

// A Nomad-native service with http and tcp checks is registered and
// checked by the client: nothing to warn about.
func TestCheck_NomadServiceAccepted(t *testing.T) {
	j := gapJob("service")
	j.TaskGroups[0].Services = []*api.Service{{Name: "api", PortLabel: "http", Provider: "nomad",
		Checks: []api.ServiceCheck{{Type: "http", Path: "/health", Interval: time.Second, Timeout: time.Second},
			{Type: "tcp", Interval: time.Second, Timeout: time.Second}}}}
	if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
		t.Errorf("want no gaps, got %q %q", g.Refused, g.Warnings)
	}
}

// shutdown_delay (group and task) is honoured by the client: no warning.
func TestCheck_ShutdownDelayAccepted(t *testing.T) {
	j := gapJob("service")
	d := 5 * time.Second
	j.TaskGroups[0].ShutdownDelay = &d
	j.TaskGroups[0].Tasks[0].ShutdownDelay = d
	if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
		t.Errorf("want no gaps, got %q %q", g.Refused, g.Warnings)
	}
}

// A sticky or migrating ephemeral disk (the scheduler prefers the previous
// node, the client moves the data there or fetches it from the previous
// node) and max_run_duration are honoured: no warning.
func TestCheck_StickyDiskAndMaxRunDurationAccepted(t *testing.T) {
	j := gapJob("batch")
	j.TaskGroups[0].EphemeralDisk = &api.EphemeralDisk{Sticky: new(true), Migrate: new(true)}
	d := time.Hour
	j.TaskGroups[0].MaxRunDuration = &d // the client stops the allocation when it elapses
	if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
		t.Errorf("want no gaps, got %q %q", g.Refused, g.Warnings)
	}
}

// A job that only restates the defaults is not warned about.
func TestCheck_ExplicitDefaultsAreQuiet(t *testing.T) {
	j := gapJob("service")
	j.Update = api.DefaultUpdateStrategy()
	j.TaskGroups[0].Migrate = api.DefaultMigrateStrategy()
	j.TaskGroups[0].ReschedulePolicy = api.NewDefaultReschedulePolicy("service")
	j.Update.MaxParallel = new(1)
	if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
		t.Errorf("want no gaps, got %q %q", g.Refused, g.Warnings)
	}
	// A group scaling block is stored and served as a scaling policy.
	j = gapJob("service")
	j.TaskGroups[0].Scaling = &api.ScalingPolicy{Min: new(int64(1)), Max: new(int64(5)), Policy: map[string]any{"check": "cpu"}}
	if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
		t.Errorf("group scaling policy: want no gaps, got %q %q", g.Refused, g.Warnings)
	}
	// The disconnect block, all of it, and the deprecated keys it replaces
	// are acted on (servers and clients).
	hour, minute := time.Hour, time.Minute
	j = gapJob("service")
	j.TaskGroups[0].Disconnect = &api.DisconnectStrategy{LostAfter: &hour, StopOnClientAfter: &minute}
	j.TaskGroups[0].MaxClientDisconnect = &hour
	j.TaskGroups[0].StopAfterClientDisconnect = &hour
	j.TaskGroups[0].PreventRescheduleOnLost = new(true)
	if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
		t.Errorf("disconnect block and legacy keys: want no gaps, got %q %q", g.Refused, g.Warnings)
	}
	// max_parallel = 0 turns rolling updates off in Nomad too.
	j = gapJob("service")
	j.Update = &api.UpdateStrategy{MaxParallel: new(0), Canary: new(0)}
	if g := checkGaps(t, j); len(g.Warnings) != 0 {
		t.Errorf("update with max_parallel = 0: want no warning, got %q", g.Warnings)
	}
}

func TestGapsWarningsText(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, "1 warning:\n\n* a"},
		{[]string{"a", "b"}, "2 warnings:\n\n* a\n* b"},
	} {
		if got := (unsupported.Gaps{Warnings: tc.in}).WarningsText(); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A template that uses only what Drover renders (variables, services, env)
// is not a gap.
func TestCheck_NomadTemplatesHaveNoGaps(t *testing.T) {
	j := gapJob("service")
	j.TaskGroups[0].Tasks[0].Templates = []*api.Template{
		{EmbeddedTmpl: new(`{{ with nomadVar "nomad/jobs/web" }}{{ .password }}{{ end }}{{ range nomadService "db" }}{{ .Address }}{{ end }}{{ env "NOMAD_TASK_NAME" }}`), DestPath: new("secrets/app.env"), Envvars: new(true)},
		{EmbeddedTmpl: new(`not {{ a template`), DestPath: new("local/broken")}, // the client's render names the error
	}
	if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
		t.Fatalf("want no gaps, got refused %q, warnings %q", g.Refused, g.Warnings)
	}
}

// Static host volumes and their mounts are built: no refusal, no warning.
func TestCheck_HostVolumeAccepted(t *testing.T) {
	j := gapJob("service")
	j.TaskGroups[0].Volumes = map[string]*api.VolumeRequest{"data": {Name: "data", Type: "host", Source: "pgdata", ReadOnly: true}}
	j.TaskGroups[0].Tasks[0].Driver = "exec"
	j.TaskGroups[0].Tasks[0].VolumeMounts = []*api.VolumeMount{{Volume: new("data"), Destination: new("/data")}}
	if g := checkGaps(t, j); len(g.Refused)+len(g.Warnings) != 0 {
		t.Errorf("want no gaps, got %q %q", g.Refused, g.Warnings)
	}
}
