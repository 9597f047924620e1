package state

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// TestWatchSets checks that every read registers watch channels that fire
// when a write changes what it read, so blocking queries wake up.
func TestWatchSets(t *testing.T) {
	type tc struct {
		name  string
		read  func(s *StateStore, ws memdb.WatchSet) error
		write func(s *StateStore) error
	}
	job := mockJob("web")
	iterRead := func(f func(*StateStore, memdb.WatchSet) (memdb.ResultIterator, error)) func(*StateStore, memdb.WatchSet) error {
		return func(s *StateStore, ws memdb.WatchSet) error { _, err := f(s, ws); return err }
	}
	addAlloc := func(s *StateStore) error {
		j, _ := s.JobByID(nil, "default", "web")
		return s.UpsertAllocs(100, []*structs.Allocation{mockAlloc("a9", "n1", j)})
	}
	clientUpdate := func(s *StateStore) error {
		return s.UpdateAllocsFromClient(100, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusComplete}})
	}
	cases := []tc{
		{"JobByID", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.JobByID(ws, "default", "web"); return err },
			func(s *StateStore) error { j := mockJob("web"); j.Priority = 70; return s.UpsertJob(100, nil, j) }},
		{"Jobs", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) { return s.Jobs(ws) }),
			func(s *StateStore) error { return s.UpsertJob(100, nil, mockJob("other")) }},
		{"JobsByNamespace", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) {
			return s.JobsByNamespace(ws, "default")
		}),
			func(s *StateStore) error { return s.UpsertJob(100, nil, mockJob("other")) }},
		{"JobsByIDPrefix", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) {
			return s.JobsByIDPrefix(ws, "default", "w")
		}),
			func(s *StateStore) error { return s.UpsertJob(100, nil, mockJob("worker")) }},
		{"JobVersionsByID", func(s *StateStore, ws memdb.WatchSet) error {
			_, err := s.JobVersionsByID(ws, "default", "web")
			return err
		},
			func(s *StateStore) error { j := mockJob("web"); j.Priority = 70; return s.UpsertJob(100, nil, j) }},
		{"JobSummaryByID", func(s *StateStore, ws memdb.WatchSet) error {
			_, err := s.JobSummaryByID(ws, "default", "web")
			return err
		}, addAlloc},
		{"EvalByID", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.EvalByID(ws, "e1"); return err },
			func(s *StateStore) error {
				return s.UpsertEvals(100, []*structs.Evaluation{mockEval("e1", job, structs.EvalStatusComplete)})
			}},
		{"EvalsByJob", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.EvalsByJob(ws, "default", "web"); return err },
			func(s *StateStore) error {
				return s.UpsertEvals(100, []*structs.Evaluation{mockEval("e2", job, structs.EvalStatusPending)})
			}},
		{"Evals", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) { return s.Evals(ws) }),
			func(s *StateStore) error { return s.DeleteEval(100, []string{"e1"}, nil) }},
		{"EvalsByIDPrefix", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) {
			return s.EvalsByIDPrefix(ws, "*", "e")
		}),
			func(s *StateStore) error { return s.DeleteEval(100, []string{"e1"}, nil) }},
		{"AllocByID", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.AllocByID(ws, "a1"); return err }, clientUpdate},
		{"Allocs", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) { return s.Allocs(ws) }), addAlloc},
		{"AllocsByIDPrefix", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) {
			return s.AllocsByIDPrefix(ws, "default", "a")
		}), addAlloc},
		{"AllocsByJob", func(s *StateStore, ws memdb.WatchSet) error {
			_, err := s.AllocsByJob(ws, "default", "web", false)
			return err
		}, addAlloc},
		{"AllocsByNode", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.AllocsByNode(ws, "n1"); return err }, addAlloc},
		{"AllocsByNodeTerminal", func(s *StateStore, ws memdb.WatchSet) error {
			_, err := s.AllocsByNodeTerminal(ws, "n1", true)
			return err
		}, clientUpdate},
		{"AllocsByEval", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.AllocsByEval(ws, "eval-a1"); return err }, clientUpdate},
		{"NodeByID", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.NodeByID(ws, "n1"); return err },
			func(s *StateStore) error { return s.UpdateNodeStatus(100, "n1", structs.NodeStatusDown, 0, nil) }},
		{"NodeBySecretID", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.NodeBySecretID(ws, "secret-n1"); return err },
			func(s *StateStore) error { return s.UpdateNodeStatus(100, "n1", structs.NodeStatusDown, 0, nil) }},
		{"Nodes", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) { return s.Nodes(ws) }),
			func(s *StateStore) error { return s.UpsertNode(100, mockNode("n2")) }},
		{"NodesByIDPrefix", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) {
			return s.NodesByIDPrefix(ws, "n")
		}),
			func(s *StateStore) error { return s.UpsertNode(100, mockNode("n2")) }},
		{"DeploymentByID", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.DeploymentByID(ws, "d1"); return err },
			func(s *StateStore) error {
				return s.UpsertDeployment(100, &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web"})
			}},
		{"Deployments", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) { return s.Deployments(ws) }),
			func(s *StateStore) error {
				return s.UpsertDeployment(100, &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web"})
			}},
		{"LatestDeploymentByJobID", func(s *StateStore, ws memdb.WatchSet) error {
			_, err := s.LatestDeploymentByJobID(ws, "default", "web")
			return err
		},
			func(s *StateStore) error {
				return s.UpsertDeployment(100, &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web"})
			}},
		{"NamespaceByName", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.NamespaceByName(ws, "prod"); return err },
			func(s *StateStore) error { return s.UpsertNamespaces(100, []*structs.Namespace{{Name: "prod"}}) }},
		{"Namespaces", iterRead(func(s *StateStore, ws memdb.WatchSet) (memdb.ResultIterator, error) { return s.Namespaces(ws) }),
			func(s *StateStore) error { return s.UpsertNamespaces(100, []*structs.Namespace{{Name: "prod"}}) }},
		{"RootKeys", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.RootKeys(ws); return err },
			func(s *StateStore) error { return s.UpsertRootKey(100, &structs.RootKey{KeyID: "k1"}) }},
		{"ClusterMetadata", func(s *StateStore, ws memdb.WatchSet) error { _, err := s.ClusterMetadata(ws); return err },
			func(s *StateStore) error { return s.SetClusterMetadata(100, &structs.ClusterMetadata{ClusterID: "c1"}) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := testStore(t)
			must(t, s.UpsertNode(5, mockNode("n1")))
			j := storedJob(t, s, 10, mockJob("web"))
			must(t, s.UpsertEvals(11, []*structs.Evaluation{mockEval("e1", j, structs.EvalStatusPending)}))
			must(t, s.UpsertAllocs(12, []*structs.Allocation{mockAlloc("a1", "n1", j)}))

			ws := memdb.NewWatchSet()
			must(t, c.read(s, ws))
			if len(ws) == 0 {
				t.Fatal("read added no watch channel")
			}
			if !quiet(ws) {
				t.Fatal("watch fired without a write")
			}
			must(t, c.write(s))
			if !fires(ws) {
				t.Fatal("watch did not fire after a write")
			}
		})
	}
}

func TestSnapshotMinIndex(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))

	// Already there: immediate.
	snap, err := s.SnapshotMinIndex(context.Background(), 5)
	must(t, err)
	if n, _ := snap.NodeByID(nil, "n1"); n == nil {
		t.Fatal("snapshot misses node")
	}

	// Waits for a later write.
	done := make(chan *StateSnapshot, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		snap, err := s.SnapshotMinIndex(ctx, 9)
		if err != nil {
			t.Errorf("SnapshotMinIndex: %v", err)
		}
		done <- snap
	}()
	must(t, s.UpsertNode(9, mockNode("n9")))
	snap = <-done
	if snap == nil {
		t.Fatal("no snapshot")
	}
	if n, _ := snap.NodeByID(nil, "n9"); n == nil {
		t.Fatal("snapshot taken before index 9")
	}

	// Times out.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.SnapshotMinIndex(ctx, 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}

	// Abandon wakes waiters.
	errc := make(chan error, 1)
	go func() {
		_, err := s.SnapshotMinIndex(context.Background(), 100)
		errc <- err
	}()
	s.Abandon()
	if err := <-errc; !errors.Is(err, ErrAbandoned) {
		t.Fatalf("err = %v, want ErrAbandoned", err)
	}
}

func TestSnapshot_Isolated(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	snap, _ := s.Snapshot()
	must(t, s.UpsertNode(6, mockNode("n2")))
	if n, _ := snap.NodeByID(nil, "n2"); n != nil {
		t.Fatal("snapshot sees later write")
	}
	if idx, _ := snap.LatestIndex(); idx != 5 {
		t.Fatalf("snapshot LatestIndex = %d", idx)
	}
	if idx, _ := s.LatestIndex(); idx != 6 {
		t.Fatalf("LatestIndex = %d", idx)
	}
}

func TestEvals_CancelBlockedOnSuccess(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertEvals(11, []*structs.Evaluation{mockEval("b1", job, structs.EvalStatusBlocked), mockEval("e2", job, structs.EvalStatusPending)}))
	must(t, s.UpsertEvals(12, []*structs.Evaluation{mockEval("e2", job, structs.EvalStatusComplete)}))
	b, _ := s.EvalByID(nil, "b1")
	if b.Status != structs.EvalStatusCancelled || b.ModifyIndex != 12 {
		t.Fatalf("blocked eval: %+v", b)
	}
	e, _ := s.EvalByID(nil, "e2")
	if e.CreateIndex != 11 || e.ModifyIndex != 12 {
		t.Fatalf("eval indexes: %+v", e)
	}
	evals, _ := s.EvalsByJob(nil, "default", "web")
	if len(evals) != 2 {
		t.Fatalf("EvalsByJob = %d", len(evals))
	}
}

func TestClusterMetadataAndRootKeys(t *testing.T) {
	s := testStore(t)
	must(t, s.SetClusterMetadata(5, &structs.ClusterMetadata{ClusterID: "c1", CreateTime: 1}))
	must(t, s.SetClusterMetadata(6, &structs.ClusterMetadata{ClusterID: "c1", CreateTime: 2}))
	if err := s.SetClusterMetadata(7, &structs.ClusterMetadata{ClusterID: "c2"}); err == nil {
		t.Fatal("cluster ID overwritten")
	}
	m, _ := s.ClusterMetadata(nil)
	if m.ClusterID != "c1" || m.CreateTime != 1 {
		t.Fatalf("meta = %+v", m)
	}
	must(t, s.UpsertRootKey(8, &structs.RootKey{KeyID: "k1", State: "active", PrivateKey: []byte{1}}))
	must(t, s.UpsertRootKey(9, &structs.RootKey{KeyID: "k1", State: "inactive"}))
	keys, _ := s.RootKeys(nil)
	if len(keys) != 1 || keys[0].State != "inactive" || keys[0].CreateIndex != 8 || keys[0].ModifyIndex != 9 {
		t.Fatalf("keys = %+v", keys)
	}
}

// dumpAll reads every table of a store for comparisons.
func dumpAll(t *testing.T, s *StateStore) map[string][]any {
	t.Helper()
	out := map[string][]any{}
	iters := map[string]func() (memdb.ResultIterator, error){
		"index":          s.Indexes,
		"jobs":           func() (memdb.ResultIterator, error) { return s.Jobs(nil) },
		"job_version":    func() (memdb.ResultIterator, error) { return s.JobVersions(nil) },
		"job_summary":    func() (memdb.ResultIterator, error) { return s.JobSummaries(nil) },
		"job_submission": func() (memdb.ResultIterator, error) { return s.JobSubmissions(nil) },
		"evals":          func() (memdb.ResultIterator, error) { return s.Evals(nil) },
		"allocs":         func() (memdb.ResultIterator, error) { return s.Allocs(nil) },
		"nodes":          func() (memdb.ResultIterator, error) { return s.Nodes(nil) },
		"deployment":     func() (memdb.ResultIterator, error) { return s.Deployments(nil) },
		"namespaces":     func() (memdb.ResultIterator, error) { return s.Namespaces(nil) },
	}
	for name, f := range iters {
		it, err := f()
		must(t, err)
		for raw := it.Next(); raw != nil; raw = it.Next() {
			out[name] = append(out[name], raw)
		}
	}
	keys, _ := s.RootKeys(nil)
	for _, k := range keys {
		out["root_keys"] = append(out["root_keys"], k)
	}
	if m, _ := s.ClusterMetadata(nil); m != nil {
		out["cluster_meta"] = []any{m}
	}
	return out
}

func TestRestore_RoundTrip(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertJob(11, &structs.JobSubmission{Source: "x"}, func() *structs.Job { j := mockJob("web"); j.Priority = 60; return j }()))
	must(t, s.UpsertEvals(12, []*structs.Evaluation{mockEval("e1", job, structs.EvalStatusPending)}))
	must(t, s.UpsertAllocs(13, []*structs.Allocation{mockAlloc("a1", "n1", job)}))
	must(t, s.UpsertDeployment(14, &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web"}))
	must(t, s.UpsertNamespaces(15, []*structs.Namespace{{Name: "prod"}}))
	must(t, s.UpsertRootKey(16, &structs.RootKey{KeyID: "k1"}))
	must(t, s.SetClusterMetadata(17, &structs.ClusterMetadata{ClusterID: "c1"}))
	want := dumpAll(t, s)

	dst := testStore(t)
	r, err := dst.Restore()
	must(t, err)
	for table, objs := range want {
		for _, o := range objs {
			var err error
			switch v := o.(type) {
			case *IndexEntry:
				err = r.IndexRestore(v.Key, v.Value)
			case *structs.Node:
				err = r.NodeRestore(v)
			case *structs.Job:
				if table == "jobs" {
					err = r.JobRestore(v)
				} else {
					err = r.JobVersionRestore(v)
				}
			case *structs.JobSummary:
				err = r.JobSummaryRestore(v)
			case *structs.JobSubmission:
				err = r.JobSubmissionRestore(v)
			case *structs.Evaluation:
				err = r.EvalRestore(v)
			case *structs.Allocation:
				err = r.AllocRestore(v)
			case *structs.Deployment:
				err = r.DeploymentRestore(v)
			case *structs.Namespace:
				err = r.NamespaceRestore(v)
			case *structs.RootKey:
				err = r.RootKeyRestore(v)
			case *structs.ClusterMetadata:
				err = r.ClusterMetadataRestore(v)
			}
			must(t, err)
		}
	}
	must(t, r.Commit())
	got := dumpAll(t, dst)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored state differs:\n got %v\nwant %v", got, want)
	}
	for _, table := range []string{"jobs", "job_version", "job_summary", "evals", "allocs", "nodes", "deployment", "namespaces", "root_keys", "cluster_meta"} {
		a, _ := s.Index(table)
		b, _ := dst.Index(table)
		if a != b || a == 0 {
			t.Errorf("index %s: %d vs %d", table, a, b)
		}
	}

	// Abort leaves the store untouched.
	r2, _ := dst.Restore()
	must(t, r2.NodeRestore(mockNode("n2")))
	r2.Abort()
	if n, _ := dst.NodeByID(nil, "n2"); n != nil {
		t.Fatal("aborted restore is visible")
	}
}
