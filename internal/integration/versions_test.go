package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Versions with diffs, stable, revert, scale and scaling events through the
// official api client against a dev agent.
func TestJobVersionsRevertScaleThroughAPI(t *testing.T) {
	a := devAgent(t)
	jobs := a.client.Jobs()
	job := rawExecJob("hist", "service", 1, `exec sleep 600`)
	// No deployment (max_parallel 0): the job is scaled right after an
	// update, which an active deployment would refuse.
	job.TaskGroups[0].Update = &api.UpdateStrategy{MaxParallel: ptr(0)}
	if _, _, err := jobs.Register(job, nil); err != nil {
		t.Fatal(err)
	}
	job.Meta = map[string]string{"release": "two"}
	if _, _, err := jobs.Register(job, nil); err != nil {
		t.Fatal(err)
	}

	versions, diffs, _, err := jobs.Versions("hist", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 2 || len(diffs) != 1 || *versions[0].Version != 1 {
		t.Fatalf("%d versions, %d diffs", len(versions), len(diffs))
	}
	if d := diffs[0]; d.Type != "Edited" || len(d.Fields) != 1 || d.Fields[0].Name != "Meta[release]" || d.Fields[0].Type != "Added" || d.Fields[0].New != "two" {
		t.Fatalf("diff: %+v fields %+v", d, d.Fields)
	}

	if _, _, err := jobs.Stable("hist", 0, true, nil); err != nil {
		t.Fatal(err)
	}
	versions, _, _, _ = jobs.Versions("hist", false, nil)
	if versions[1].Stable == nil || !*versions[1].Stable {
		t.Fatalf("version 0 not stable: %+v", versions[1].Stable)
	}

	if _, _, err := jobs.Revert("hist", 1, nil, nil, "", ""); err == nil || !strings.Contains(err.Error(), "can't revert to current version") {
		t.Fatalf("revert to current: %v", err)
	}
	resp, _, err := jobs.Revert("hist", 0, ptr(uint64(1)), nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" {
		t.Fatal("revert created no evaluation")
	}
	cur, _, _ := jobs.Info("hist", nil)
	if *cur.Version != 2 || cur.Meta["release"] != "" {
		t.Fatalf("after revert: version %d meta %v", *cur.Version, cur.Meta)
	}

	if _, _, err := jobs.Scale("hist", "g", ptr(2), "scale up", false, map[string]any{"who": "test"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "two running allocs", func() bool {
		n := 0
		for _, s := range a.allocsOf("hist") {
			if s.ClientStatus == "running" && s.DesiredStatus == "run" {
				n++
			}
		}
		return n == 2
	})
	st, _, err := jobs.ScaleStatus("hist", nil)
	if err != nil {
		t.Fatal(err)
	}
	g := st.TaskGroups["g"]
	if g.Desired != 2 || len(g.Events) != 1 || g.Events[0].Message != "scale up" || g.Events[0].PreviousCount != 1 ||
		g.Events[0].EvalID == nil || g.Events[0].Meta["who"] != "test" {
		t.Fatalf("scale status: %+v", g)
	}
	if _, err := jobs.TagVersion("hist", 0, "first", "the original", nil); err != nil {
		t.Fatal(err)
	}
	if v, _, err := jobs.VersionByTag("hist", "first", nil); err != nil || *v.Version != 0 {
		t.Fatalf("version by tag: %v", err)
	}
	if _, err := jobs.UntagVersion("hist", "first", nil); err != nil {
		t.Fatal(err)
	}
}
