package taskrunner

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

func TestHostVolumeMounts(t *testing.T) {
	tg := &structs.TaskGroup{Name: "g", Volumes: map[string]*structs.VolumeRequest{
		"data":  {Name: "data", Type: "host", Source: "pg", PerAlloc: true},
		"certs": {Name: "certs", Type: "host", Source: "certs", ReadOnly: true},
		"logs":  {Name: "logs", Type: "host", Source: "logs"},
	}}
	task := &structs.Task{Name: "t", VolumeMounts: []*structs.VolumeMount{
		{Volume: new("data"), Destination: new("/var/lib/pg"), PropagationMode: new("host-to-task")},
		{Volume: new("certs"), Destination: new("/certs")},
		{Volume: new("logs"), Destination: new("/logs"), ReadOnly: new(true), SELinuxLabel: new("z")},
	}}
	alloc := &structs.Allocation{Name: "db.g[2]", TaskGroup: "g", Job: &structs.Job{TaskGroups: []*structs.TaskGroup{tg}}}
	node := &structs.Node{HostVolumes: map[string]*structs.HostVolumeInfo{
		"pg[2]": {Path: "/srv/pg2"}, "certs": {Path: "/etc/certs"}, "logs": {Path: "/var/log/app"},
	}}
	got, err := HostVolumeMounts(alloc, task, node)
	if err != nil {
		t.Fatal(err)
	}
	want := []drivers.MountConfig{
		{TaskPath: "/var/lib/pg", HostPath: "/srv/pg2", PropagationMode: "host-to-task"},
		{TaskPath: "/certs", HostPath: "/etc/certs", ReadOnly: true},
		{TaskPath: "/logs", HostPath: "/var/log/app", ReadOnly: true, SELinuxLabel: "z"},
	}
	if len(got) != len(want) {
		t.Fatalf("mounts %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mount %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// The node lost the volume after placement: the error names it.
	delete(node.HostVolumes, "pg[2]")
	if _, err := HostVolumeMounts(alloc, task, node); err == nil || !strings.Contains(err.Error(), `no host volume named "pg[2]"`) {
		t.Fatalf("missing volume: err = %v", err)
	}
	// A read-only host volume stays read-only whatever the job asks.
	node.HostVolumes["pg[2]"] = &structs.HostVolumeInfo{Path: "/srv/pg2", ReadOnly: true}
	if got, _ := HostVolumeMounts(alloc, task, node); !got[0].ReadOnly {
		t.Fatal("a read-only host volume was mounted read-write")
	}
}
