package feasible

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func volNode(id string, vols map[string]*structs.HostVolumeInfo) *structs.Node {
	n := testNode()
	n.ID = id
	n.HostVolumes = vols
	n.ComputeClass()
	return n
}

// feasibleIDs runs the feasibility iterator for tg (placing allocName)
// over nodes and returns the IDs it lets through, and the metrics.
func feasibleIDs(t *testing.T, tg *structs.TaskGroup, allocName string, nodes ...*structs.Node) ([]string, *structs.AllocMetric) {
	t.Helper()
	ctx := NewContext(allocState{}, &structs.Plan{}, nil, 1, 1)
	f := NewFeasibilityIterator(ctx, NewSourceIterator(ctx, nodes))
	f.SetJob(&structs.Job{})
	f.SetTaskGroup(tg)
	f.SetAllocName(allocName)
	var out []string
	for n := f.Next(); n != nil; n = f.Next() {
		out = append(out, n.ID)
	}
	return out, ctx.Metrics()
}

func TestHostVolumeFeasibility(t *testing.T) {
	rw := &structs.HostVolumeInfo{Path: "/srv/data"}
	ro := &structs.HostVolumeInfo{Path: "/srv/data", ReadOnly: true}
	// Nodes of one computed class: the volume check must not be memoised.
	none := volNode("none", nil)
	hasRW := volNode("rw", map[string]*structs.HostVolumeInfo{"data": rw})
	hasRO := volNode("ro", map[string]*structs.HostVolumeInfo{"data": ro})
	other := volNode("other", map[string]*structs.HostVolumeInfo{"logs": rw})

	group := func(readOnly bool) *structs.TaskGroup {
		return &structs.TaskGroup{Name: "g", Volumes: map[string]*structs.VolumeRequest{
			"v": {Name: "v", Type: "host", Source: "data", ReadOnly: readOnly}}}
	}
	got, m := feasibleIDs(t, group(false), "j.g[0]", none, hasRW, hasRO, other)
	if len(got) != 1 || got[0] != "rw" {
		t.Errorf("read-write request: feasible %v, want only [rw] (not on a read-only volume, not without it)", got)
	}
	if m.ConstraintFiltered[FilterHostVolumes] != 3 || m.NodesFiltered != 3 {
		t.Errorf("read-write request: metrics %+v, want 3 nodes filtered by %q", m, FilterHostVolumes)
	}
	got, _ = feasibleIDs(t, group(true), "j.g[0]", none, hasRW, hasRO, other)
	if len(got) != 2 || got[0] != "rw" || got[1] != "ro" {
		t.Errorf("read-only request: feasible %v, want [rw ro]", got)
	}
	// A group without volumes is not affected.
	got, _ = feasibleIDs(t, &structs.TaskGroup{Name: "g"}, "j.g[0]", none, hasRW)
	if len(got) != 2 {
		t.Errorf("no volumes: feasible %v, want both nodes", got)
	}
}

func TestHostVolumeFeasibilityPerAlloc(t *testing.T) {
	n0 := volNode("n0", map[string]*structs.HostVolumeInfo{"data[0]": {Path: "/a"}})
	n1 := volNode("n1", map[string]*structs.HostVolumeInfo{"data[1]": {Path: "/b"}})
	plain := volNode("plain", map[string]*structs.HostVolumeInfo{"data": {Path: "/c"}})
	tg := &structs.TaskGroup{Name: "g", Count: 2, Volumes: map[string]*structs.VolumeRequest{
		"v": {Name: "v", Type: "host", Source: "data", PerAlloc: true}}}
	for name, want := range map[string]string{"j.g[0]": "n0", "j.g[1]": "n1"} {
		got, _ := feasibleIDs(t, tg, name, n0, n1, plain)
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: feasible %v, want [%s]", name, got, want)
		}
	}
	if got, m := feasibleIDs(t, tg, "j.g[2]", n0, n1, plain); len(got) != 0 || m.ConstraintFiltered[FilterHostVolumes] != 3 {
		t.Errorf("j.g[2]: feasible %v (metrics %+v), want none, filtered by %q", got, m, FilterHostVolumes)
	}
	if src := HostVolumeSource(tg.Volumes["v"], "j.g[1]"); src != "data[1]" {
		t.Errorf("HostVolumeSource = %q, want data[1]", src)
	}
}

// The stack resolves per_alloc sources from SelectOptions.AllocName.
func TestStackHostVolumePerAlloc(t *testing.T) {
	n0 := sizedNode("n0", 4000, 4096, 0)
	n0.HostVolumes = map[string]*structs.HostVolumeInfo{"data[0]": {Path: "/a"}}
	n1 := sizedNode("n1", 4000, 4096, 0)
	n1.HostVolumes = map[string]*structs.HostVolumeInfo{"data[1]": {Path: "/b"}}
	n0.ComputeClass()
	n1.ComputeClass()
	tg := &structs.TaskGroup{Name: "g", Count: 2, Volumes: map[string]*structs.VolumeRequest{
		"v": {Name: "v", Type: "host", Source: "data", PerAlloc: true}},
		Tasks: []*structs.Task{{Name: "t", Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}
	job := &structs.Job{ID: "j", Namespace: "default", Type: structs.JobTypeService, TaskGroups: []*structs.TaskGroup{tg}}
	for name, want := range map[string]string{"j.g[0]": "n0", "j.g[1]": "n1"} {
		ctx := NewContext(allocState{}, &structs.Plan{}, nil, 1, 1)
		s := NewGenericStack(false, "binpack", ctx)
		s.SetNodes([]*structs.Node{n0, n1})
		s.SetJob(job)
		opt := s.Select(tg, &SelectOptions{AllocName: name})
		if opt == nil || opt.Node.ID != want {
			t.Errorf("%s: selected %v, want %s", name, opt, want)
		}
	}
}
