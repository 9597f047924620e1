package sim

import (
	"bufio"
	"bytes"
	"io"
	"net/rpc"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/structs"
)

func encode(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, structs.MsgpackHandle).Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodeBoth decodes b into a fresh T with go-msgpack's reflection decoder
// (what nodesim decoded before the hand-written decoders) and with the
// hand-written one, and fails unless they agree.
func decodeBoth[T any, P interface {
	*T
	leanAnswer
}](t *testing.T, name string, b []byte) *T {
	t.Helper()
	want := new(T)
	if err := codec.NewDecoder(bytes.NewReader(b), structs.MsgpackHandle).Decode(want); err != nil {
		t.Fatalf("%s: reflection decode: %v", name, err)
	}
	for _, size := range []int{16, readBufferSize} {
		got := new(T)
		r := testReader(append(b, 0x2a), size)
		P(got).decodeMsgpack(r)
		if err := r.done(); err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s (buffer %d):\n got %s\nwant %s", name, size, dump(got), dump(want))
		}
		if r.readUint() != 42 {
			t.Fatalf("%s: decoding left the stream out of step", name)
		}
	}
	return want
}

func dump(v any) string {
	var buf bytes.Buffer
	codec.NewEncoder(&buf, &codec.JsonHandle{}).Encode(v)
	return buf.String()
}

func TestLeanDecodeMatchesReflection(t *testing.T) {
	pull := testPullAnswer()
	got := decodeBoth[pullAnswer](t, "pull", encode(t, pull))
	if len(got.Changed) != 3 || len(got.Allocs) != 10 || got.Changed[0].Job.TaskGroups[0].Tasks[0].Name != "t" {
		t.Fatalf("realistic pull decoded as %s", dump(got))
	}
	decodeBoth[allocsAnswer](t, "allocs", encode(t, testAllocsAnswer()))

	pull.Changed = nil
	decodeBoth[pullAnswer](t, "pull, nil Changed", encode(t, pull))
	pull.Changed, pull.Allocs = []*structs.Allocation{}, map[string]uint64{}
	decodeBoth[pullAnswer](t, "pull, empty Changed and Allocs", encode(t, pull))
	pull.Allocs = nil
	decodeBoth[pullAnswer](t, "pull, nil Allocs", encode(t, pull))

	noJob := testAllocsAnswer()
	noJob.Allocs[1].Job = nil
	noJob.Allocs[2].Job.TaskGroups = nil
	got2 := decodeBoth[allocsAnswer](t, "allocation without job", encode(t, noJob))
	if got2.Allocs[1].Job != nil {
		t.Fatal("job out of nothing")
	}
	decodeBoth[allocsAnswer](t, "nil allocations", encode(t, &structs.AllocsGetResponse{}))
	decodeBoth[allocsAnswer](t, "nil answer", encode(t, nil))

	// The default encoding (a nil allocation makes the server fall back to
	// it): metrics included, a nil element.
	type defaultShape struct {
		Changed []*structs.Allocation
		Allocs  map[string]uint64
		structs.QueryMeta
	}
	a := testAlloc(testJob(4), 1, false)
	decodeBoth[pullAnswer](t, "default encoding", encode(t, &defaultShape{Changed: []*structs.Allocation{a, nil}, Allocs: map[string]uint64{a.ID: 9}, QueryMeta: structs.QueryMeta{Index: 7}}))
}

// Fields the lean types do not have are skipped whatever they hold, at
// every level.
func TestLeanDecodeSkipsUnknownFields(t *testing.T) {
	odd := map[string]any{
		"Nested": map[string]any{"m": map[string]any{"x": []any{1, -5, -70000, 2.5, float32(-1), nil, []byte("bin"), "str", true}}},
		"Neg":    int64(-1 << 40), "Float": 1e300, "Nil": nil, "Time": time.Unix(1, 2).UTC(),
		"Bin":  bytes.Repeat([]byte{7}, 300),
		"Long": string(bytes.Repeat([]byte{'l'}, 70000)),
	}
	task := map[string]any{"Name": "t1", "Driver": "raw_exec", "Config": odd}
	group := map[string]any{"Name": "g", "Count": 3, "Tasks": []any{task, nil, map[string]any{"Extra": odd}}, "Extra": odd}
	job := map[string]any{"ID": "j", "Type": "batch", "JobModifyIndex": uint64(1 << 40), "TaskGroups": []any{group}, "Meta": odd}
	alloc := map[string]any{
		"ID": "a", "Namespace": "ns", "JobID": "j", "TaskGroup": "g", "DesiredStatus": "stop", "ClientStatus": "complete",
		"AllocModifyIndex": 12, "Job": job, "Metrics": odd, "TaskStates": odd, "Unknown": []any{odd, odd},
	}
	answer := map[string]any{"Allocs": []any{alloc, nil, map[string]any{}}, "Index": 99, "Trailer": odd, "KnownLeader": true}
	got := decodeBoth[allocsAnswer](t, "unknown fields", encode(t, answer))
	if len(got.Allocs) != 3 || got.Allocs[0].Job.JobModifyIndex != 1<<40 || got.Allocs[0].Job.TaskGroups[0].Tasks[0].Name != "t1" {
		t.Fatalf("decoded %s", dump(got))
	}
	pull := map[string]any{"Allocs": map[string]any{"a": 12, "b": 0}, "Changed": []any{alloc}, "MigrateTokens": map[string]any{"a": "tok"}, "Index": 99, "Extra": odd}
	decodeBoth[pullAnswer](t, "unknown fields, pull", encode(t, pull))
}

// A field of an unexpected type fails the answer, as with go-msgpack, and
// the connection's next answer still decodes.
func TestLeanDecodeMismatch(t *testing.T) {
	bad := encode(t, map[string]any{"Index": "not a number", "Allocs": []any{map[string]any{"ID": 5, "Job": "not a job"}}})
	good := encodeResponse(t, 2, "Alloc.GetAllocs", testAllocsAnswer())
	header := mp(0x83, 0xad, "ServiceMethod", 0xa0, 0xa3, "Seq", 1, 0xa5, "Error", 0xa0)
	c := newClientCodec(&loopConn{b: mp(header, bad, good)})
	var h rpc.Response
	if err := c.ReadResponseHeader(&h); err != nil || h.Seq != 1 {
		t.Fatalf("header %+v, err %v", h, err)
	}
	var a allocsAnswer
	if err := c.ReadResponseBody(&a); err == nil {
		t.Fatal("a string decoded as an index")
	}
	if err := c.ReadResponseHeader(&h); err != nil || h.Seq != 2 {
		t.Fatalf("next header %+v, err %v", h, err)
	}
	a = allocsAnswer{}
	if err := c.ReadResponseBody(&a); err != nil || len(a.Allocs) != 10 {
		t.Fatalf("next answer: %d allocs, err %v", len(a.Allocs), err)
	}
}

// The codec reads what a server's codec writes, in sequence: lean answers,
// other answers through go-msgpack, and failed calls whose bodies are
// skipped.
func TestClientCodecReadsServerStream(t *testing.T) {
	var stream bytes.Buffer
	srv := codec.GoRpc.ServerCodec(&rwc{w: &stream}, structs.MsgpackHandle)
	write := func(seq uint64, method, errMsg string, body any) {
		if err := srv.WriteResponse(&rpc.Response{ServiceMethod: method, Seq: seq, Error: errMsg}, body); err != nil {
			t.Fatal(err)
		}
	}
	write(1, "Node.GetClientAllocs", "", testPullAnswer())
	write(2, "Node.UpdateStatus", "", &structs.NodeUpdateResponse{HeartbeatTTL: 10 * time.Second, Index: 3, EvalIDs: []string{"e"}})
	write(3, "Alloc.GetAllocs", "boom", struct{}{})
	write(4, "Alloc.GetAllocs", "", testAllocsAnswer())
	write(5, "Node.UpdateStatus", "", &structs.NodeUpdateResponse{HeartbeatTTL: 20 * time.Second})

	c := newClientCodec(&rwc{r: bufio.NewReader(bytes.NewReader(stream.Bytes()))})
	header := func(seq uint64, errMsg string) {
		t.Helper()
		var h rpc.Response
		if err := c.ReadResponseHeader(&h); err != nil || h.Seq != seq || h.Error != errMsg {
			t.Fatalf("header %d: %+v, err %v", seq, h, err)
		}
	}
	header(1, "")
	var pull pullAnswer
	if err := c.ReadResponseBody(&pull); err != nil || len(pull.Changed) != 3 || pull.Index != 5000 {
		t.Fatalf("pull: %s, err %v", dump(pull), err)
	}
	header(2, "")
	var up structs.NodeUpdateResponse
	if err := c.ReadResponseBody(&up); err != nil || up.HeartbeatTTL != 10*time.Second || up.Index != 3 {
		t.Fatalf("update: %+v, err %v", up, err)
	}
	header(3, "boom")
	if err := c.ReadResponseBody(nil); err != nil {
		t.Fatal(err)
	}
	header(4, "")
	var allocs allocsAnswer
	if err := c.ReadResponseBody(&allocs); err != nil || len(allocs.Allocs) != 10 {
		t.Fatalf("allocs: %d, err %v", len(allocs.Allocs), err)
	}
	header(5, "")
	up = structs.NodeUpdateResponse{}
	if err := c.ReadResponseBody(&up); err != nil || up.HeartbeatTTL != 20*time.Second {
		t.Fatalf("update: %+v, err %v", up, err)
	}
	var h rpc.Response
	if err := c.ReadResponseHeader(&h); err != io.EOF {
		t.Fatalf("end of stream: %v, want EOF", err)
	}
}

type rwc struct {
	r *bufio.Reader
	w *bytes.Buffer
}

func (c *rwc) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *rwc) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *rwc) Close() error                { return nil }
