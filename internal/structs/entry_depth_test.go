package structs

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// nested returns a value nesting depth maps (and lists every other level).
func nested(depth int) any {
	var v any = "leaf"
	for i := 0; i < depth; i++ {
		if i%2 == 0 {
			v = map[string]any{"a": v}
		} else {
			v = []any{1, v}
		}
	}
	return v
}

func jobWithConfig(cfg map[string]any) *Job {
	return &Job{ID: "web", Name: "web", Namespace: DefaultNamespace, Type: JobTypeBatch, Priority: 50,
		Datacenters: []string{"dc1"}, SubmitTime: time.Now().UnixNano(),
		TaskGroups: []*TaskGroup{{Name: "g", Count: 1, Tasks: []*Task{{
			Name: "t", Driver: "raw_exec", Config: cfg,
			Resources: &Resources{CPU: 100, MemoryMB: 64},
		}}}}}
}

// An entry within MaxEntryDepth decodes with the FSM's decoder; one past it
// is refused before it could be proposed; one past the decoder's own limit
// (the poison entries of issue 11) would not have decoded.
func TestCheckEntryDepth(t *testing.T) {
	// A job register entry puts seven levels above the config's value:
	// request, Job, TaskGroups, the group, Tasks, the task, Config.
	const above = 7
	for _, tc := range []struct {
		depth      int
		wantErr    bool
		decodeFail bool
	}{
		{depth: 2},
		{depth: MaxEntryDepth - above},
		{depth: MaxEntryDepth - above + 1, wantErr: true},
		{depth: 3000, wantErr: true, decodeFail: true},
	} {
		req := &JobRegisterRequest{Job: jobWithConfig(map[string]any{"nest": nested(tc.depth), "bytes": []byte{1, 2}, "f": 1.5, "n": -7})}
		buf, err := Encode(JobRegisterRequestType, req)
		if err != nil {
			t.Fatalf("depth %d: encode: %v", tc.depth, err)
		}
		err = CheckEntryDepth(buf[1:])
		if (err != nil) != tc.wantErr {
			t.Fatalf("depth %d: CheckEntryDepth = %v, want error %v", tc.depth, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "more than 512 levels") {
			t.Fatalf("depth %d: error does not say why: %v", tc.depth, err)
		}
		var out JobRegisterRequest
		derr := Decode(buf[1:], &out)
		if !tc.wantErr && derr != nil {
			t.Fatalf("depth %d: passed the check but does not decode: %v", tc.depth, derr)
		}
		if tc.decodeFail && derr == nil {
			t.Fatalf("depth %d: expected the FSM's decoder to refuse it", tc.depth)
		}
	}
}

func TestCheckEntryDepthRefusesTruncatedBodies(t *testing.T) {
	buf, err := Encode(JobRegisterRequestType, &JobRegisterRequest{Job: jobWithConfig(map[string]any{"command": "/bin/true"})})
	if err != nil {
		t.Fatal(err)
	}
	body := buf[1:]
	if err := CheckEntryDepth(body); err != nil {
		t.Fatalf("whole body: %v", err)
	}
	for _, n := range []int{0, 1, len(body) / 2, len(body) - 1} {
		if err := CheckEntryDepth(body[:n]); err == nil {
			t.Fatalf("body cut to %d of %d bytes passed", n, len(body))
		}
	}
	if err := CheckEntryDepth([]byte{0xc1}); err == nil {
		t.Fatal("the never-used byte 0xc1 passed")
	}
}

// A task config nested deeper than MaxTaskConfigDepth fails validation with
// the task named, whichever endpoint (HTTP or RPC) the job came through.
func TestValidateConfigDepth(t *testing.T) {
	ok := jobWithConfig(map[string]any{"nest": nested(MaxTaskConfigDepth - 1)})
	if err := ok.Validate(); err != nil {
		t.Fatalf("config at the limit: %v", err)
	}
	deep := jobWithConfig(map[string]any{"nest": nested(MaxTaskConfigDepth)})
	err := deep.Validate()
	if err == nil || !strings.Contains(err.Error(), `task "t"`) || !strings.Contains(err.Error(), "Config nests maps and lists more than 64 levels deep") {
		t.Fatalf("deep config: %v", err)
	}
	typed := jobWithConfig(map[string]any{"args": []string{"a"}, "m": map[string][]map[string]int{"x": {{"y": 1}}}, "b": []byte("x")})
	if d := valueDepth(reflect.ValueOf(typed.TaskGroups[0].Tasks[0].Config), 10); d != 4 {
		t.Fatalf("typed config depth = %d, want 4", d)
	}
}
