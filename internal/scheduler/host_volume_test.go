package scheduler

import (
	"sort"
	"testing"

	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/structs"
)

// A group asking for a host volume is placed only on nodes that have it;
// without one the placement fails with Nomad's reason, and once a node
// offers the volume the job is placed there.
func TestHostVolumeGroupNeedsVolumeNode(t *testing.T) {
	h := NewHarness()
	plain := mockNode("plain")
	plain.ComputeClass()
	h.State.UpsertNode(plain)
	job := mockJob("db", 1)
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "host", Source: "pgdata"}}
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	if n := len(liveAllocs(h, "db")); n != 0 {
		t.Fatalf("placed %d allocations on a node without the host volume", n)
	}
	m := lastEval(t, h).FailedTGAllocs["web"]
	if m == nil || m.ConstraintFiltered[feasible.FilterHostVolumes] != 1 {
		t.Fatalf("metrics = %+v, want one node filtered by %q", m, feasible.FilterHostVolumes)
	}

	ro := mockNode("ro")
	ro.HostVolumes = map[string]*structs.HostVolumeInfo{"pgdata": {Path: "/srv/pg", ReadOnly: true}}
	ro.ComputeClass()
	h.State.UpsertNode(ro)
	withVol := mockNode("with-volume")
	withVol.HostVolumes = map[string]*structs.HostVolumeInfo{"pgdata": {Path: "/srv/pg"}}
	withVol.ComputeClass()
	h.State.UpsertNode(withVol)
	process(t, h, mockEval(job))
	got := liveAllocs(h, "db")
	if len(got) != 1 || got[0].NodeID != "with-volume" {
		t.Fatalf("allocations %v, want one on node with-volume (not on the read-only volume)", got)
	}
}

// per_alloc volumes put each allocation on the node with its own volume.
func TestHostVolumePerAllocPlacement(t *testing.T) {
	h := NewHarness()
	for i, id := range []string{"n0", "n1", "n2"} {
		n := mockNode(id)
		n.HostVolumes = map[string]*structs.HostVolumeInfo{"pgdata[" + string(rune('0'+i)) + "]": {Path: "/srv/pg"}}
		n.ComputeClass()
		h.State.UpsertNode(n)
	}
	job := mockJob("db", 3)
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "host", Source: "pgdata", PerAlloc: true}}
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	got := liveAllocs(h, "db")
	if len(got) != 3 {
		t.Fatalf("placed %d allocations, want 3", len(got))
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	for i, a := range got {
		if want := "n" + string(rune('0'+i)); a.NodeID != want {
			t.Errorf("%s on %s, want %s (the node with pgdata[%d])", a.Name, a.NodeID, want, i)
		}
	}
}
