package events

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

func jobChange(id, ns string) memdb.Change {
	return memdb.Change{Table: "jobs", After: &structs.Job{ID: id, Namespace: ns}}
}

func evalChange(id, jobID string) memdb.Change {
	return memdb.Change{Table: "evals", After: &structs.Evaluation{ID: id, Namespace: "default", JobID: jobID}}
}

func next(t *testing.T, s *Subscription) (uint64, []*Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.Next(ctx)
}

func all() *Request { return &Request{Namespace: "*", Topics: map[string][]string{"*": {"*"}}} }

// Each entry is one batch at its index; a subscriber reads them in order
// from the oldest buffered, and one resuming at an index gets exactly the
// batches from that index on.
func TestBrokerOrderAndResume(t *testing.T) {
	b := NewBroker(10)
	for i := uint64(1); i <= 5; i++ {
		b.Publish(i*10, structs.JobRegisterRequestType, []memdb.Changes{{jobChange("j", "default"), evalChange("e", "j")}})
	}
	s := b.Subscribe(all())
	for i := uint64(1); i <= 5; i++ {
		idx, evs, err := next(t, s)
		if err != nil || idx != i*10 || len(evs) != 2 || evs[0].Index != idx || evs[0].Type != TypeJobRegistered {
			t.Fatalf("batch %d: index %d, %d events, %v", i, idx, len(evs), err)
		}
	}
	// Resume at 25: the first batch with index >= 25 is 30.
	r := all()
	r.Index = 25
	s = b.Subscribe(r)
	if idx, _, _ := next(t, s); idx != 30 {
		t.Fatalf("resume at 25 started at %d, want 30", idx)
	}
	// Past every buffered index: waits for the next entry.
	r = all()
	r.Index = 1000
	s = b.Subscribe(r)
	go b.Publish(1000, structs.EvalUpdateRequestType, []memdb.Changes{{evalChange("e2", "j")}})
	if idx, evs, err := next(t, s); err != nil || idx != 1000 || evs[0].Key != "e2" {
		t.Fatalf("live: %d %v %v", idx, evs, err)
	}
}

// Entries of types without events, or that changed no table with events,
// publish nothing.
func TestBrokerSkipsEntriesWithoutEvents(t *testing.T) {
	b := NewBroker(10)
	b.Publish(1, structs.RootKeyUpsertRequestType, []memdb.Changes{{jobChange("j", "default")}})
	b.Publish(2, structs.JobRegisterRequestType, []memdb.Changes{{{Table: "job_summary", After: 1}}})
	if b.Len() != 0 {
		t.Fatalf("ring holds %d batches, want 0", b.Len())
	}
}

// A subscriber the ring overtook is told where to resume; the publisher
// never waited for it.
func TestBrokerSlowSubscriberFallsBehind(t *testing.T) {
	b := NewBroker(3)
	b.Publish(1, structs.JobRegisterRequestType, []memdb.Changes{{jobChange("a", "default")}})
	s := b.Subscribe(all())
	if idx, _, err := next(t, s); err != nil || idx != 1 {
		t.Fatal(idx, err)
	}
	for i := uint64(2); i <= 10; i++ {
		b.Publish(i, structs.JobRegisterRequestType, []memdb.Changes{{jobChange("a", "default")}})
	}
	_, _, err := next(t, s)
	var fb *FellBehindError
	if !errors.As(err, &fb) || fb.Next != 2 || !strings.Contains(err.Error(), "index=2") {
		t.Fatalf("err = %v, want fell behind resuming at 2", err)
	}
	b.Close()
	if _, _, err := next(t, b.Subscribe(all())); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestRequestFilters(t *testing.T) {
	parse := func(q string) *Request {
		v, _ := url.ParseQuery(q)
		r, err := ParseQuery(v)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return r
	}
	job := fromChange(TypeJobRegistered, 1, &memdb.Change{Table: "jobs", After: &structs.Job{ID: "web", Namespace: "default"}})
	other := fromChange(TypeJobRegistered, 1, &memdb.Change{Table: "jobs", After: &structs.Job{ID: "web", Namespace: "prod"}})
	alloc := fromChange(TypePlanResult, 1, &memdb.Change{Table: "allocs", After: &structs.Allocation{ID: "a1", Namespace: "default", JobID: "web"}})
	node := fromChange(TypeNodeRegistration, 1, &memdb.Change{Table: "nodes", After: &structs.Node{ID: "n1"}})
	cases := []struct {
		q    string
		e    *Event
		want bool
	}{
		{"", job, true},
		{"", other, false}, // default namespace only
		{"namespace=*", other, true},
		{"namespace=prod", other, true},
		{"topic=Job", job, true},
		{"topic=Job:web", job, true},
		{"topic=Job:api", job, false},
		{"topic=Allocation:web", alloc, true}, // by its job ID
		{"topic=Allocation:a1", alloc, true},
		{"topic=Evaluation", alloc, false},
		{"topic=*:*", alloc, true},
		{"topic=Node&namespace=prod", node, true}, // nodes have no namespace
	}
	for _, c := range cases {
		if got := parse(c.q).Matches(c.e); got != c.want {
			t.Errorf("%q matches %s/%s: %v, want %v", c.q, c.e.Topic, c.e.Key, got, c.want)
		}
	}
	for _, bad := range []string{"topic=Evaluation:::*", "topic=:x", "topic=Job:", "index=-1", "index=x"} {
		v, _ := url.ParseQuery(bad)
		if _, err := ParseQuery(v); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Frames are Nomad's JSON; payloads hide node secrets and alloc jobs.
func TestFramePayloads(t *testing.T) {
	b := NewBroker(4)
	b.Publish(7, structs.ApplyPlanResultsRequestType, []memdb.Changes{{
		{Table: "allocs", After: &structs.Allocation{ID: "a1", Namespace: "default", JobID: "web", Job: &structs.Job{ID: "web"}}},
		{Table: "nodes", After: &structs.Node{ID: "n1", SecretID: "s3cret"}},
		{Table: "jobs", Before: &structs.Job{ID: "old", Namespace: "default"}},
	}})
	idx, evs, err := next(t, b.Subscribe(all()))
	if err != nil {
		t.Fatal(err)
	}
	line := Frame(idx, evs)
	if strings.Contains(string(line), "s3cret") || line[len(line)-1] != '\n' {
		t.Fatalf("frame leaks the node secret or lacks its newline: %s", line)
	}
	var got struct {
		Index  uint64
		Events []struct {
			Topic, Type, Key string
			FilterKeys       []string
			Index            uint64
			Payload          map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	if got.Index != 7 || len(got.Events) != 3 {
		t.Fatalf("frame %s", line)
	}
	obj := func(raw json.RawMessage) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return m
	}
	a := got.Events[0]
	if a.Topic != "Allocation" || a.Type != "PlanResult" || a.Key != "a1" || obj(a.Payload["Allocation"])["Job"] != nil || a.FilterKeys[0] != "web" {
		t.Fatalf("alloc event %+v", a)
	}
	if n := obj(got.Events[1].Payload["Node"]); n["ID"] != "n1" || n["SecretID"] != "" {
		t.Fatalf("node event %+v", n)
	}
	if j := got.Events[2]; j.Key != "old" || obj(j.Payload["Job"])["ID"] != "old" {
		t.Fatalf("deleted job event %+v", j)
	}
	if !strings.Contains(string(line), `"Deleted":true`) {
		t.Fatalf("deleted job not marked: %s", line)
	}
}

// A forwarded stream is a chain of polls: each continues after the last
// batch the previous one went through (matching or not), so batches the
// reader did not ask for may leave the ring without ending it; one it
// had still to read ends it.
func TestPollContinues(t *testing.T) {
	b := NewBroker(3)
	web := &Request{Namespace: "default", Topics: map[string][]string{"Job": {"web"}}}
	b.Publish(1, structs.JobRegisterRequestType, []memdb.Changes{{jobChange("web", "default")}})
	var r PollResponse
	if err := b.Poll(&PollRequest{Req: *web, Wait: time.Millisecond}, &r); err != nil || len(r.Frames) != 1 || r.Last != 1 {
		t.Fatalf("first poll: %+v %v", r, err)
	}
	// Ten entries nobody asked for pass through and out of the ring.
	for i := uint64(2); i <= 11; i++ {
		b.Publish(i, structs.JobRegisterRequestType, []memdb.Changes{{jobChange("api", "default")}})
	}
	// The poll that continues after 1 did not go through 2..8 (they left
	// the ring): it cannot know it missed nothing.
	next := *web
	next.Index = r.Last + 1
	r = PollResponse{}
	if err := b.Poll(&PollRequest{Req: next, Continue: true, Wait: time.Millisecond}, &r); err != nil || !strings.Contains(r.Err, "fell behind") {
		t.Fatalf("continuing past evicted batches: %+v %v", r, err)
	}
	// A poll that went through 9..11 continues at 12 even though none
	// matched.
	next.Index = 9
	r = PollResponse{}
	if err := b.Poll(&PollRequest{Req: next, Continue: true, Wait: time.Millisecond}, &r); err != nil || r.Err != "" || len(r.Frames) != 0 || r.Last != 11 {
		t.Fatalf("poll over unmatched batches: %+v %v", r, err)
	}
	next.Index = r.Last + 1
	go b.Publish(12, structs.JobRegisterRequestType, []memdb.Changes{{jobChange("web", "default")}})
	r = PollResponse{}
	if err := b.Poll(&PollRequest{Req: next, Continue: true, Wait: 5 * time.Second}, &r); err != nil || r.Err != "" || len(r.Frames) != 1 || r.Last != 12 {
		t.Fatalf("live poll: %+v %v", r, err)
	}
}

// Readers of whole batches share one frame per batch; a filtered reader
// gets a frame of its events only.
func TestNextFrameSharedForWholeBatches(t *testing.T) {
	b := NewBroker(4)
	b.Publish(3, structs.JobRegisterRequestType, []memdb.Changes{{jobChange("web", "default"), evalChange("e1", "web")}})
	ctx := context.Background()
	f1, err1 := b.Subscribe(all()).NextFrame(ctx)
	f2, err2 := b.Subscribe(&Request{Namespace: "default", Topics: map[string][]string{"*": {"*"}}}).NextFrame(ctx)
	if err1 != nil || err2 != nil || &f1[0] != &f2[0] {
		t.Fatalf("whole-batch readers got separate frames (%v %v)", err1, err2)
	}
	f3, err := b.Subscribe(&Request{Namespace: "default", Topics: map[string][]string{"Evaluation": {"*"}}}).NextFrame(ctx)
	if err != nil || !json.Valid(f3) || strings.Contains(string(f3), `"Topic":"Job"`) || !strings.Contains(string(f3), `"Key":"e1"`) {
		t.Fatalf("filtered frame %s (%v)", f3, err)
	}
}
