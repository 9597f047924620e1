package apiconv

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// richJob sets every scalar the conversion touches, so a lossy field shows up
// as a difference after the round trip.
func richJob() *api.Job {
	d := func(s string) *time.Duration { v, _ := time.ParseDuration(s); return &v }
	return &api.Job{
		Region:                   new("east"),
		Namespace:                new("prod"),
		ID:                       new("web"),
		Name:                     new("web-name"),
		Type:                     new("service"),
		Priority:                 new(70),
		AllAtOnce:                new(true),
		Datacenters:              []string{"dc1", "dc2"},
		NodePool:                 new("gpu"),
		Constraints:              []*api.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		Affinities:               []*api.Affinity{{LTarget: "${node.class}", RTarget: "big", Operand: "=", Weight: new(int8(50))}},
		Spreads:                  []*api.Spread{{Attribute: "${node.datacenter}", Weight: new(int8(100))}},
		Reschedule:               &api.ReschedulePolicy{Attempts: new(3), Interval: d("1h"), Delay: d("30s"), DelayFunction: new("exponential"), MaxDelay: d("10m"), Unlimited: new(false)},
		Meta:                     map[string]string{"owner": "ops"},
		ParentID:                 new("parent"),
		DispatchIdempotencyToken: new("tok"),
		Payload:                  []byte("payload"),
		ConsulNamespace:          new("cns"),
		VaultNamespace:           new("vns"),
		NomadTokenID:             new("ntid"),
		Stop:                     new(false),
		Status:                   new("running"),
		StatusDescription:        new("ok"),
		Stable:                   new(true),
		Version:                  new(uint64(4)),
		SubmitTime:               new(int64(1700000000)),
		CreateIndex:              new(uint64(10)),
		ModifyIndex:              new(uint64(12)),
		JobModifyIndex:           new(uint64(11)),
		TaskGroups: []*api.TaskGroup{{
			Name:                    new("frontend"),
			Count:                   new(3),
			RestartPolicy:           &api.RestartPolicy{Interval: d("5m"), Attempts: new(4), Delay: d("10s"), Mode: new("fail"), RenderTemplates: new(true)},
			ReschedulePolicy:        &api.ReschedulePolicy{Attempts: new(0), Interval: d("0s"), Delay: d("5s"), DelayFunction: new("constant"), MaxDelay: d("1m"), Unlimited: new(true)},
			EphemeralDisk:           &api.EphemeralDisk{Sticky: new(true), Migrate: new(true), SizeMB: new(500)},
			PreventRescheduleOnLost: new(true),
			ShutdownDelay:           d("3s"),
			Meta:                    map[string]string{"tier": "web"},
			Networks: []*api.NetworkResource{{
				Mode:          "bridge",
				Device:        "eth0",
				CIDR:          "10.0.0.0/8",
				IP:            "10.0.0.1",
				Hostname:      "web",
				MBits:         new(10),
				DNS:           &api.DNSConfig{Servers: []string{"1.1.1.1"}},
				ReservedPorts: []api.Port{{Label: "http", Value: 8080, To: 80, HostNetwork: "public", IgnoreCollision: true}},
				DynamicPorts:  []api.Port{{Label: "metrics", To: 9100}},
			}},
			Services: []*api.Service{{Name: "web", PortLabel: "http", Provider: "nomad"}},
			Tasks: []*api.Task{{
				Name:        "server",
				Driver:      "raw_exec",
				User:        "nobody",
				Config:      map[string]any{"command": "/bin/sleep", "args": []any{"100"}},
				Env:         map[string]string{"A": "b"},
				KillTimeout: d("7s"),
				KillSignal:  "SIGINT",
				Leader:      true,
				Resources: &api.Resources{
					CPU: new(250), Cores: new(0), MemoryMB: new(128), MemoryMaxMB: new(256), DiskMB: new(50),
					IOPS: new(0), SecretsMB: new(1),
					Networks: []*api.NetworkResource{{MBits: new(5), DynamicPorts: []api.Port{{Label: "old"}}}},
					Devices:  []*api.RequestedDevice{{Name: "nvidia/gpu", Count: new(uint64(1))}},
					NUMA:     &api.NUMAResource{Affinity: "prefer"},
				},
				RestartPolicy: &api.RestartPolicy{Interval: d("5m"), Attempts: new(1), Delay: d("1s"), Mode: new("delay"), RenderTemplates: new(false)},
				LogConfig:     &api.LogConfig{MaxFiles: new(3), MaxFileSizeMB: new(7), Disabled: new(true)},
				Templates:     []*api.Template{{EmbeddedTmpl: new("hello"), DestPath: new("local/x")}},
			}},
		}},
	}
}

func TestRoundTripRichJob(t *testing.T) {
	want := richJob()
	want.Canonicalize()

	sj := ApiJobToStructJob(richJob())
	got := StructJobToApiJob(sj)

	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("round trip differs\n got: %s\nwant: %s", g, w)
	}

	// Spot-check values the engine reads directly.
	tg := sj.TaskGroups[0]
	task := tg.Tasks[0]
	switch {
	case sj.Priority != 70 || sj.Region != "east" || sj.Namespace != "prod":
		t.Fatalf("job scalars lost: %+v", sj)
	case tg.Count != 3 || tg.EphemeralDisk.SizeMB != 500 || !tg.PreventRescheduleOnLost:
		t.Fatalf("group scalars lost: %+v", tg)
	case tg.Networks[0].ReservedPorts[0].Value != 8080 || tg.Networks[0].DynamicPorts[0].To != 9100:
		t.Fatalf("ports lost: %+v", tg.Networks[0])
	case task.Resources.CPU != 250 || task.Resources.MemoryMaxMB != 256 || task.Resources.DiskMB != 50:
		t.Fatalf("resources lost: %+v", task.Resources)
	case task.KillTimeout != 7*time.Second || task.RestartPolicy.Attempts != 1:
		t.Fatalf("task scalars lost: %+v", task)
	case task.LogConfig.MaxFiles != 3 || task.LogConfig.MaxFileSizeMB != 7 || !task.LogConfig.Disabled:
		t.Fatalf("log config lost: %+v", task.LogConfig)
	case tg.ReschedulePolicy.DelayFunction != "constant" || !tg.ReschedulePolicy.Unlimited:
		t.Fatalf("reschedule lost: %+v", tg.ReschedulePolicy)
	}
}

func TestCanonicalizeFillsDefaults(t *testing.T) {
	j := &api.Job{ID: new("min"), TaskGroups: []*api.TaskGroup{{Name: new("g"), Tasks: []*api.Task{{Name: "t", Driver: "raw_exec"}}}}}
	sj := ApiJobToStructJob(j)
	task := sj.TaskGroups[0].Tasks[0]
	if sj.Name != "min" || sj.Namespace != "default" || sj.Region != "global" || sj.Type != "service" || sj.Priority != 50 {
		t.Fatalf("job defaults missing: %+v", sj)
	}
	if sj.TaskGroups[0].Count != 1 || sj.TaskGroups[0].EphemeralDisk.SizeMB != 300 {
		t.Fatalf("group defaults missing: %+v", sj.TaskGroups[0])
	}
	if task.Resources.CPU != 100 || task.Resources.MemoryMB != 300 || task.LogConfig.MaxFiles != 10 || task.KillTimeout != 5*time.Second {
		t.Fatalf("task defaults missing: %+v %+v", task.Resources, task.LogConfig)
	}
}

func TestLegacyLogEnabledFalse(t *testing.T) {
	l := logToStruct(&api.LogConfig{Enabled: new(false)})
	if !l.Disabled {
		t.Fatal("enabled=false must disable logs")
	}
	if ApiJobToStructJob(nil) != nil || StructJobToApiJob(nil) != nil {
		t.Fatal("nil must convert to nil")
	}
}
