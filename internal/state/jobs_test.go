package state

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func TestNewStateStore_DefaultNamespace(t *testing.T) {
	s := testStore(t)
	ns, err := s.NamespaceByName(nil, structs.DefaultNamespace)
	must(t, err)
	if ns == nil {
		t.Fatal("default namespace missing")
	}
	if idx, _ := s.Index("namespaces"); idx == 0 {
		t.Fatal("namespaces index not set")
	}
}

func TestUpsertJob_Versions(t *testing.T) {
	s := testStore(t)
	sub := &structs.JobSubmission{Source: "job {}", Format: "hcl2"}
	must(t, s.UpsertJob(10, sub, mockJob("web")))

	j, _ := s.JobByID(nil, "default", "web")
	if j.Version != 0 || j.CreateIndex != 10 || j.ModifyIndex != 10 || j.JobModifyIndex != 10 {
		t.Fatalf("new job indexes: %+v", j)
	}
	if j.Status != structs.JobStatusPending {
		t.Fatalf("new job status = %q, want pending", j.Status)
	}
	if got, _ := s.JobSubmission(nil, "default", "web", 0); got == nil || got.Source != "job {}" || got.JobModifyIndex != 10 {
		t.Fatalf("submission = %+v", got)
	}

	// Same spec: no new version.
	must(t, s.UpsertJob(11, nil, mockJob("web")))
	j, _ = s.JobByID(nil, "default", "web")
	if j.Version != 0 || j.JobModifyIndex != 10 || j.ModifyIndex != 11 || j.CreateIndex != 10 {
		t.Fatalf("unchanged spec: %+v", j)
	}

	// Spec changes bump the version, keep CreateIndex.
	for i := 1; i <= 8; i++ {
		job := mockJob("web")
		job.TaskGroups[0].Count = 2 + i
		must(t, s.UpsertJob(uint64(20+i), nil, job))
	}
	j, _ = s.JobByID(nil, "default", "web")
	if j.Version != 8 || j.JobModifyIndex != 28 || j.CreateIndex != 10 {
		t.Fatalf("after 8 changes: version=%d jmi=%d ci=%d", j.Version, j.JobModifyIndex, j.CreateIndex)
	}
	versions, err := s.JobVersionsByID(nil, "default", "web")
	must(t, err)
	if len(versions) != structs.JobTrackedVersions {
		t.Fatalf("tracked %d versions, want %d", len(versions), structs.JobTrackedVersions)
	}
	for i, v := range versions {
		if want := uint64(8 - i); v.Version != want {
			t.Fatalf("versions[%d] = %d, want %d (newest first)", i, v.Version, want)
		}
	}
	if v, _ := s.JobByIDAndVersion(nil, "default", "web", 8); v == nil || v.TaskGroups[0].Count != 10 {
		t.Fatalf("version 8 = %+v", v)
	}
	if v, _ := s.JobByIDAndVersion(nil, "default", "web", 0); v != nil {
		t.Fatal("version 0 should have been pruned")
	}
	if got, _ := s.JobSubmission(nil, "default", "web", 0); got != nil {
		t.Fatal("submission of pruned version should be gone")
	}
	if idx, _ := s.Index("jobs"); idx != 28 {
		t.Fatalf("jobs index = %d", idx)
	}
}

func TestUpsertJob_PrefixAndNamespaces(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNamespaces(5, []*structs.Namespace{{Name: "prod"}}))
	must(t, s.UpsertJob(10, nil, mockJob("web")))
	must(t, s.UpsertJob(11, nil, mockJob("worker")))
	other := mockJob("web-prod")
	other.Namespace = "prod"
	must(t, s.UpsertJob(12, nil, other))

	cases := []struct {
		ns, prefix string
		want       int
	}{
		{"default", "w", 2},
		{"default", "web", 1},
		{"prod", "w", 1},
		{"*", "web", 2},
		{"*", "", 3},
		{"default", "x", 0},
	}
	for _, c := range cases {
		it, err := s.JobsByIDPrefix(nil, c.ns, c.prefix)
		if got := iterCount(t, it, err); got != c.want {
			t.Errorf("JobsByIDPrefix(%q,%q) = %d, want %d", c.ns, c.prefix, got, c.want)
		}
	}
	it, err := s.JobsByNamespace(nil, "prod")
	if n := iterCount(t, it, err); n != 1 {
		t.Errorf("JobsByNamespace(prod) = %d", n)
	}
	it, err = s.Jobs(nil)
	if n := iterCount(t, it, err); n != 3 {
		t.Errorf("Jobs = %d", n)
	}
}

func TestDeleteJob_Purge(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertAllocs(11, []*structs.Allocation{mockAlloc("a1", "n1", job)}))
	must(t, s.DeleteJob(12, "default", "web"))
	if j, _ := s.JobByID(nil, "default", "web"); j != nil {
		t.Fatal("job still present")
	}
	if v, _ := s.JobVersionsByID(nil, "default", "web"); len(v) != 0 {
		t.Fatal("versions still present")
	}
	if sum, _ := s.JobSummaryByID(nil, "default", "web"); sum != nil {
		t.Fatal("summary still present")
	}
	// Purging an unknown job is a no-op.
	must(t, s.DeleteJob(13, "default", "nope"))

	// A re-registered job does not see the old incarnation's allocs.
	job2 := storedJob(t, s, 20, mockJob("web"))
	if job2.CreateIndex != 20 || job2.Version != 0 {
		t.Fatalf("re-registered job: %+v", job2)
	}
	cur, _ := s.AllocsByJob(nil, "default", "web", false)
	all, _ := s.AllocsByJob(nil, "default", "web", true)
	if len(cur) != 0 || len(all) != 1 {
		t.Fatalf("AllocsByJob current=%d all=%d, want 0/1", len(cur), len(all))
	}
	if st := jobStatusOf(t, s, "web"); st != structs.JobStatusPending {
		t.Fatalf("re-registered job status = %q, want pending", st)
	}
	if sum := tgSummary(t, s, "web", "web"); sum != (structs.TaskGroupSummary{}) {
		t.Fatalf("re-registered summary counts old allocs: %+v", sum)
	}
}

func TestJobSummary_GroupsFollowJob(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertJob(10, nil, mockJob("web")))
	job := mockJob("web")
	job.TaskGroups = append(job.TaskGroups, &structs.TaskGroup{Name: "db", Count: 1})
	job.TaskGroups = job.TaskGroups[1:] // drop "web", keep "db"
	must(t, s.UpsertJob(11, nil, job))
	sum, _ := s.JobSummaryByID(nil, "default", "web")
	if _, ok := sum.Summary["db"]; !ok {
		t.Fatal("new group missing from summary")
	}
	if _, ok := sum.Summary["web"]; ok {
		t.Fatal("removed group still in summary")
	}
}

func TestJobChildrenSummary(t *testing.T) {
	s := testStore(t)
	parent := mockJob("batch")
	parent.Type = structs.JobTypeBatch
	parent.ParameterizedJob = &structs.ParameterizedJobConfig{}
	must(t, s.UpsertJob(10, nil, parent))
	if st := jobStatusOf(t, s, "batch"); st != structs.JobStatusRunning {
		t.Fatalf("parameterized parent status = %q", st)
	}
	child := mockJob("batch/dispatch-1")
	child.Type = structs.JobTypeBatch
	child.ParentID = "batch"
	child.Dispatched = true
	child.ParameterizedJob = &structs.ParameterizedJobConfig{}
	cj := storedJob(t, s, 11, child)
	sum, _ := s.JobSummaryByID(nil, "default", "batch")
	if sum.Children == nil || sum.Children.Pending != 1 {
		t.Fatalf("children after dispatch = %+v", sum.Children)
	}
	must(t, s.UpsertAllocs(12, []*structs.Allocation{mockAlloc("c1", "n1", cj)}))
	sum, _ = s.JobSummaryByID(nil, "default", "batch")
	if sum.Children.Pending != 0 || sum.Children.Running != 1 {
		t.Fatalf("children after alloc = %+v", sum.Children)
	}
	must(t, s.DeleteJob(13, "default", child.ID))
	sum, _ = s.JobSummaryByID(nil, "default", "batch")
	if sum.Children.Running != 0 {
		t.Fatalf("children after purge = %+v", sum.Children)
	}
}
