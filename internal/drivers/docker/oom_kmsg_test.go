package docker

import (
	"syscall"
	"testing"
)

type fakeKmsg struct{ recs []string }

func (f *fakeKmsg) Read(b []byte) (int, error) {
	if len(f.recs) == 0 {
		return -1, syscall.EAGAIN
	}
	r := f.recs[0]
	f.recs = f.recs[1:]
	if r == "EPIPE" {
		return -1, syscall.EPIPE
	}
	return copy(b, r), nil
}

func TestScanOOMAttributesByMemcg(t *testing.T) {
	log := func() *fakeKmsg {
		return &fakeKmsg{recs: []string{
			"6,100,1,-;veth0: left promiscuous mode\n",
			"EPIPE",
			"4,101,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=libpod-aaa,mems_allowed=0,oom_memcg=/libpod_parent/libpod-aaa,task_memcg=/libpod_parent/libpod-aaa,task=tail,pid=9,uid=0\n",
			"3,102,3,-;Memory cgroup out of memory: Killed process 9 (tail)\n",
		}}
	}
	if !scanOOM(log(), "aaa") {
		t.Fatal("the container's OOM record not found")
	}
	if scanOOM(log(), "bbb") {
		t.Fatal("another cgroup's OOM attributed to the container")
	}
	// cpuset= names the container too, but only oom_memcg counts.
	if scanOOM(&fakeKmsg{recs: []string{"4,1,1,-;oom-kill:cpuset=libpod-ccc,oom_memcg=/other,task_memcg=/libpod_parent/libpod-ccc\n"}}, "ccc") {
		t.Fatal("a kill in another memory cgroup attributed to the container")
	}
}

// dockerd's containers: /docker/<id> under cgroupfs, docker-<id>.scope
// under systemd.
func TestScanOOMDockerCgroups(t *testing.T) {
	for _, memcg := range []string{"/docker/ddd", "/system.slice/docker-ddd.scope"} {
		rec := "4,1,1,-;oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=" + memcg + ",task_memcg=" + memcg + ",task=tail,pid=9,uid=0\n"
		if !scanOOM(&fakeKmsg{recs: []string{rec}}, "ddd") {
			t.Errorf("an OOM kill in %s not attributed to container ddd", memcg)
		}
		if scanOOM(&fakeKmsg{recs: []string{rec}}, "dd") {
			t.Errorf("an OOM kill in %s attributed to container dd", memcg)
		}
	}
}
