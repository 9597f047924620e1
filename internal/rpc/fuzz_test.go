package rpc

import (
	"bytes"
	"io"
	"net"
	"net/rpc"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/fuzzseed"
	"github.com/drover-project/drover/internal/structs"
)

// The fuzz targets of the wire codec: whatever bytes a peer sends, decoding
// never panics, and it never allocates far more than it was sent (a length
// prefix is a claim, not a promise: five bytes must not make the decoder
// allocate gigabytes).

// wireTypes are the bodies a server and a client decode, the fuzz input's
// first byte picks one; requests and replies of the RPCs that carry the
// largest and most varied bodies.
var wireTypes = []func() any{
	func() any { return new(structs.JobRegisterRequest) },
	func() any { return new(structs.NodeRegisterRequest) },
	func() any { return new(structs.NodeUpdateStatusRequest) },
	func() any { return new(structs.AllocUpdateRequest) },
	func() any { return new(structs.PlanRequest) },
	func() any { return new(structs.EvalUpdateRequest) },
	func() any { return new(structs.NodeSpecificRequest) },
	func() any { return new(structs.AllocsGetRequest) },
	func() any { return new(structs.NodeClientAllocsResponse) },
	func() any { return new(structs.AllocsGetResponse) },
	func() any { return new(structs.EvalDequeueResponse) },
	func() any { return new(structs.PlanResponse) },
	func() any { return new(structs.JobRegisterResponse) },
	func() any { return nil }, // a body net/rpc discards (unknown method)
}

// fuzzConn is a connection whose peer sent in and then closed; what is
// written to it is discarded.
type fuzzConn struct{ r *bytes.Reader }

func (c *fuzzConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *fuzzConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *fuzzConn) Close() error                     { return nil }
func (c *fuzzConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *fuzzConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

// allocBudget is what decoding in bytes may allocate: the decoded values
// are a few times their encoding, plus a constant for the codec's buffers.
func allocBudget(in int) uint64 { return 8<<20 + 64*uint64(in) }

// allocated runs fn and returns the bytes it allocated. (runtime/metrics,
// not ReadMemStats: stopping the world on every input stalls the fuzzer.)
func allocated(fn func()) uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	fn()
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

// encodeCall is what a client writes for one call: the request header and
// the body, as the codec writes them.
func encodeCall(t testing.TB, seq uint64, method string, body any) []byte {
	var buf bytes.Buffer
	enc := codec.NewEncoder(&buf, structs.MsgpackHandle)
	if err := enc.Encode(&rpc.Request{ServiceMethod: method, Seq: seq}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(body); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// encodeReply is what a server writes for one answer.
func encodeReply(t testing.TB, seq uint64, method, errText string, body any) []byte {
	var buf bytes.Buffer
	enc := codec.NewEncoder(&buf, structs.MsgpackHandle)
	if err := enc.Encode(&rpc.Response{ServiceMethod: method, Seq: seq, Error: errText}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(body); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func seedJob() *structs.Job {
	return &structs.Job{
		Namespace: "default", ID: "web", Name: "web", Type: structs.JobTypeService, Priority: 50, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 2,
			Tasks: []*structs.Task{{Name: "server", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"60"}, "nested": map[string]any{"k": 1.5}},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}},
	}
}

func seedAlloc() *structs.Allocation {
	return &structs.Allocation{ID: "a1", Namespace: "default", EvalID: "e1", NodeID: "n1", JobID: "web", Job: seedJob(),
		TaskGroup: "web", Name: "web.web[0]", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		TaskStates: map[string]*structs.TaskState{"server": {State: structs.TaskStateRunning}}}
}

// addCodecSeeds registers real calls and answers, as this build encodes
// them, under the selector byte of their body type.
func addCodecSeeds(f *testing.F) {
	node := &structs.Node{ID: "n1", SecretID: "s1", Name: "n1", Datacenter: "dc1", Status: structs.NodeStatusReady,
		Attributes:    map[string]string{"kernel.name": "linux", "cpu.arch": "amd64"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000}, Memory: structs.NodeMemoryResources{MemoryMB: 8192}}}
	eval := &structs.Evaluation{ID: "e1", Namespace: "default", JobID: "web", Type: "service", Status: "pending", Priority: 50, TriggeredBy: "job-register"}
	seeds := []struct {
		name string
		sel  byte
		wire []byte
	}{
		{"job-register", 0, encodeCall(f, 1, "Job.Register", &structs.JobRegisterRequest{Job: seedJob(), Eval: eval,
			WriteRequest: structs.WriteRequest{Region: "global", Namespace: "default"}})},
		{"node-register", 1, encodeCall(f, 2, "Node.Register", &structs.NodeRegisterRequest{Node: node})},
		{"node-status", 2, encodeCall(f, 3, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "n1", Status: structs.NodeStatusReady})},
		{"alloc-update", 3, encodeCall(f, 4, "Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{seedAlloc()}})},
		{"plan-submit", 4, encodeCall(f, 5, "Plan.Submit", &structs.PlanRequest{Plan: &structs.Plan{EvalID: "e1", Job: seedJob(),
			NodeAllocation: map[string][]*structs.Allocation{"n1": {seedAlloc()}}}})},
		{"eval-update", 5, encodeCall(f, 6, "Eval.Update", &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}})},
		{"client-allocs", 6, encodeCall(f, 7, "Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: "n1",
			QueryOptions: structs.QueryOptions{MinQueryIndex: 10, MaxQueryTime: 5 * time.Minute}})},
		{"allocs-get", 7, encodeCall(f, 8, "Alloc.GetAllocs", &structs.AllocsGetRequest{AllocIDs: []string{"a1", "a2"}})},
		{"client-allocs-reply", 8, encodeReply(f, 7, "Node.GetClientAllocs", "", &structs.NodeClientAllocsResponse{Allocs: map[string]uint64{"a1": 12}})},
		{"allocs-get-reply", 9, encodeReply(f, 8, "Alloc.GetAllocs", "", &structs.AllocsGetResponse{Allocs: []*structs.Allocation{seedAlloc()}})},
		{"eval-dequeue-reply", 10, encodeReply(f, 9, "Eval.Dequeue", "", &structs.EvalDequeueResponse{Eval: eval, Token: "tok"})},
		{"plan-reply", 11, encodeReply(f, 10, "Plan.Submit", "", &structs.PlanResponse{Result: &structs.PlanResult{
			NodeAllocation: map[string][]*structs.Allocation{"n1": {seedAlloc()}}}})},
		{"error-reply", 12, encodeReply(f, 11, "Job.Register", "400: Job validation failed", &struct{}{})},
		{"unknown-method", 13, encodeCall(f, 12, "Nope.Nope", map[string]any{"x": 1})},
	}
	for _, s := range seeds {
		fuzzseed.Add(f, s.name, append([]byte{s.sel}, s.wire...))
	}
	// Length prefixes that claim far more than follows, in a field the
	// header does not have (skipped values took the allocating path): a
	// timestamp ext32, str32, bin32, array32 and map32 of up to 4 GiB.
	for _, p := range [][]byte{{0xc9, 0x7f, 0xff, 0xff, 0xff, 0xff}, {0xdb, 0xff, 0xff, 0xff, 0xff}, {0xc6, 0xff, 0xff, 0xff, 0xff},
		{0xdd, 0xff, 0xff, 0xff, 0xff}, {0xdf, 0xff, 0xff, 0xff, 0xff}} {
		f.Add(append([]byte{0, 0x81, 0xa1, 'X'}, p...))
	}
}

// FuzzServerCodec feeds a server connection arbitrary bytes: the codec reads
// request headers and bodies (of the type the first byte selects) until it
// fails.
func FuzzServerCodec(f *testing.F) {
	addCodecSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		mk, in := wireTypes[int(data[0])%len(wireTypes)], data[1:]
		n := allocated(func() {
			c := NewServerCodec(bufferedConn(&fuzzConn{r: bytes.NewReader(in)}))
			defer c.Close()
			for i := 0; i < 16; i++ {
				var req rpc.Request
				if err := c.ReadRequestHeader(&req); err != nil {
					return
				}
				if err := c.ReadRequestBody(mk()); err != nil {
					return
				}
			}
		})
		if n > allocBudget(len(in)) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(in), n)
		}
	})
}

// FuzzClientCodec feeds a client connection arbitrary bytes as the server's
// answers.
func FuzzClientCodec(f *testing.F) {
	addCodecSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		mk, in := wireTypes[int(data[0])%len(wireTypes)], data[1:]
		n := allocated(func() {
			c := NewClientCodec(bufferedConn(&fuzzConn{r: bytes.NewReader(in)}))
			defer c.Close()
			for i := 0; i < 16; i++ {
				var resp rpc.Response
				if err := c.ReadResponseHeader(&resp); err != nil {
					return
				}
				if err := c.ReadResponseBody(mk()); err != nil {
					return
				}
			}
		})
		if n > allocBudget(len(in)) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(in), n)
		}
	})
}

// FuzzListener hands the listener a connection that sends arbitrary bytes:
// the first byte picks the protocol (net/rpc, Raft, yamux, or none), the
// rest is that protocol's stream. An Echo server answers what decodes.
func FuzzListener(f *testing.F) {
	echo := encodeCall(f, 1, "Echo.Say", &EchoArgs{Msg: "hi"})
	fuzzseed.Add(f, "rpc-echo", append([]byte{ProtoRPC}, echo...))
	fuzzseed.Add(f, "raft", []byte{ProtoRaft, 0x00, 0x01})
	fuzzseed.Add(f, "unknown-proto", []byte{0x7f, 0x01})
	// A yamux stream open (SYN window update) and a data frame with a call.
	yamuxOpen := []byte{0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0}
	hdr := []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}
	hdr[8], hdr[9], hdr[10], hdr[11] = byte(len(echo)>>24), byte(len(echo)>>16), byte(len(echo)>>8), byte(len(echo))
	mux := append(append(append([]byte{ProtoMultiplex}, yamuxOpen...), hdr...), echo...)
	fuzzseed.Add(f, "yamux-echo", mux)

	srv := rpc.NewServer()
	released := make(chan struct{})
	close(released) // a call with Hold set answers at once
	if err := srv.RegisterName("Echo", Echo{held: released}); err != nil {
		f.Fatal(err)
	}
	l := NewListener(&net.TCPListener{}, srv, nil, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		conn := &fuzzConn{r: bytes.NewReader(data)}
		n := allocated(func() { l.handle(conn) })
		if n > allocBudget(len(data)) {
			t.Fatalf("serving %d bytes allocated %d bytes", len(data), n)
		}
	})
}

var _ io.ReadWriteCloser = (*fuzzConn)(nil)
