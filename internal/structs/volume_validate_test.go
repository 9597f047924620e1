package structs

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

func volumeJob(typ string) *Job {
	j := &Job{ID: "db", Type: typ, TaskGroups: []*TaskGroup{{
		Name: "g", Count: 1,
		Volumes: map[string]*VolumeRequest{"data": {Name: "data", Type: "host", Source: "pgdata"}},
		Tasks: []*Task{{Name: "t", Driver: "exec", VolumeMounts: []*VolumeMount{
			{Volume: new("data"), Destination: new("/var/lib/data")},
		}}},
	}}}
	j.Canonicalize()
	return j
}

func TestValidateHostVolumeAccepted(t *testing.T) {
	for _, typ := range []string{JobTypeService, JobTypeBatch, JobTypeSystem} {
		if err := volumeJob(typ).Validate(); err != nil {
			t.Errorf("%s: a plain host volume is valid, got %v", typ, err)
		}
	}
	j := volumeJob(JobTypeService)
	j.TaskGroups[0].Volumes["data"].PerAlloc = true
	j.TaskGroups[0].Volumes["data"].ReadOnly = true
	if err := j.Validate(); err != nil {
		t.Errorf("per_alloc read_only host volume is valid, got %v", err)
	}
}

func TestValidateVolumesNameTheField(t *testing.T) {
	vol := func(f func(v *VolumeRequest)) func(j *Job) {
		return func(j *Job) { f(j.TaskGroups[0].Volumes["data"]) }
	}
	mnt := func(f func(m *VolumeMount)) func(j *Job) {
		return func(j *Job) { f(j.TaskGroups[0].Tasks[0].VolumeMounts[0]) }
	}
	cases := []struct {
		name string
		typ  string
		mut  func(j *Job)
		want string
	}{
		{"no source", "", vol(func(v *VolumeRequest) { v.Source = "" }),
			`Task group "g": Volume "data": Source: volume has an empty source`},
		{"bad type", "", vol(func(v *VolumeRequest) { v.Type = "nfs" }),
			`Volume "data": Type: invalid volume type "nfs" (must be "host" or "csi")`},
		{"no type", "", vol(func(v *VolumeRequest) { v.Type = "" }), `Volume "data": Type: missing volume type`},
		{"access mode on host", "", vol(func(v *VolumeRequest) { v.AccessMode = "single-node-writer" }),
			`Volume "data": AccessMode: host volumes cannot have an access mode`},
		{"attachment mode on host", "", vol(func(v *VolumeRequest) { v.AttachmentMode = "file-system" }),
			`Volume "data": AttachmentMode: host volumes cannot have an attachment mode`},
		{"sticky on host", "", vol(func(v *VolumeRequest) { v.Sticky = true }), `Volume "data": Sticky: only CSI`},
		{"mount options on host", "", vol(func(v *VolumeRequest) { v.MountOptions = &api.CSIMountOptions{FSType: "ext4"} }),
			`Volume "data": MountOptions: host volumes cannot have mount options`},
		{"per_alloc system", JobTypeSystem, vol(func(v *VolumeRequest) { v.PerAlloc = true }),
			`Volume "data": PerAlloc: volume cannot be per_alloc for system jobs`},
		{"per_alloc canaries", "", func(j *Job) {
			j.TaskGroups[0].Volumes["data"].PerAlloc = true
			j.TaskGroups[0].Update = &UpdateStrategy{Canary: new(1)}
		}, `PerAlloc: volume cannot be per_alloc when canaries are in use`},
		{"undefined volume", "", mnt(func(m *VolumeMount) { m.Volume = new("logs") }),
			`Task group "g", task "t": VolumeMounts[0].Volume: volume_mount references undefined volume "logs"`},
		{"no destination", "", mnt(func(m *VolumeMount) { m.Destination = new("") }),
			`task "t": VolumeMounts[0].Destination: missing destination`},
		{"bad propagation", "", mnt(func(m *VolumeMount) { m.PropagationMode = new("shared") }),
			`VolumeMounts[0].PropagationMode: invalid propagation mode "shared"`},
		{"bad selinux", "", mnt(func(m *VolumeMount) { m.SELinuxLabel = new("rw") }),
			`VolumeMounts[0].SELinuxLabel: invalid SELinux label "rw"`},
		{"raw_exec", "", func(j *Job) { j.TaskGroups[0].Tasks[0].Driver = "raw_exec" },
			`VolumeMounts[0]: task driver raw_exec does not support host volumes`},
		{"qemu", "", func(j *Job) { j.TaskGroups[0].Tasks[0].Driver = "qemu" },
			`VolumeMounts[0]: task driver qemu does not support host volumes`},
	}
	for _, c := range cases {
		typ := c.typ
		if typ == "" {
			typ = JobTypeService
		}
		j := volumeJob(typ)
		c.mut(j)
		err := j.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error containing %q, got %v", c.name, c.want, err)
		}
	}
}
