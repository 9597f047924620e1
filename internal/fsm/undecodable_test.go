package fsm

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/structs"
)

// deepConfigJob has a task config nested past the msgpack decoder's 1,024
// levels: it encodes, and no server can decode it (issue 11, item 3).
func deepConfigJob(id string) *structs.Job {
	j := testJob(id)
	var v any = 1
	for i := 0; i < 3000; i++ {
		v = map[string]any{"a": v}
	}
	j.TaskGroups[0].Tasks[0].Config = map[string]any{"nest": v}
	return j
}

// An entry that cannot be decoded is skipped the same way on every server:
// Apply answers an *UndecodableError (never a panic), logs it once under a
// name that says it changed nothing, applies the entries after it, and two
// servers replaying the same log end with identical state.
func TestApply_UndecodableEntryIsSkipped(t *testing.T) {
	logs := []*raft.Log{
		entry(t, 1, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("before")}),
		entry(t, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: deepConfigJob("deep")}),
		entry(t, 3, structs.JobRegisterBatchRequestType, &structs.JobRegisterBatchRequest{Jobs: []*structs.JobRegisterRequest{{Job: deepConfigJob("deep-batch")}}}),
		entry(t, 4, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("after")}),
	}
	var states []map[string][][]byte
	for range 2 {
		var logBuf strings.Builder
		f, err := New(Config{Logger: hclog.New(&hclog.LoggerOptions{Output: &logBuf})})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range logs {
			resp := f.Apply(l)
			if l.Index == 2 || l.Index == 3 {
				var ue *UndecodableError
				if err, _ := resp.(error); !errors.As(err, &ue) || !strings.Contains(err.Error(), "maximum decoding depth exceeded") {
					t.Fatalf("index %d: Apply = %#v, want an UndecodableError", l.Index, resp)
				}
				continue
			}
			if resp != nil {
				t.Fatalf("index %d: Apply = %v", l.Index, resp)
			}
		}
		for _, id := range []string{"before", "after"} {
			if j, _ := f.State().JobByID(nil, structs.DefaultNamespace, id); j == nil {
				t.Fatalf("job %q missing: an undecodable entry stopped the ones around it", id)
			}
		}
		for _, id := range []string{"deep", "deep-batch"} {
			if j, _ := f.State().JobByID(nil, structs.DefaultNamespace, id); j != nil {
				t.Fatalf("job %q stored from an undecodable entry", id)
			}
		}
		out := logBuf.String()
		if n := strings.Count(out, "skipped a Raft entry that cannot be decoded"); n != 2 || strings.Contains(out, "apply failed") {
			t.Fatalf("want one 'skipped' line per bad entry and no 'apply failed', got:\n%s", out)
		}
		states = append(states, dump(t, f.State()))
	}
	if !reflect.DeepEqual(states[0], states[1]) {
		t.Fatal("two replays of the same log with undecodable entries diverged")
	}
}
