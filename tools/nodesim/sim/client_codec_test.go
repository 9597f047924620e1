package sim

import (
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"reflect"
	"sync"
	"testing"
	"time"

	drpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// FakeNode and FakeAlloc answer as servers do, with the realistic answers.
type FakeNode struct{}

func (FakeNode) GetClientAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	if args.NodeID == "unknown" {
		return errors.New("node not found")
	}
	*reply = *testPullAnswer()
	return nil
}

func (FakeNode) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	reply.HeartbeatTTL, reply.Index = 10*time.Second, 7
	return nil
}

type FakeAlloc struct{}

func (FakeAlloc) GetAllocs(args *structs.AllocsGetRequest, reply *structs.AllocsGetResponse) error {
	*reply = *testAllocsAnswer()
	return nil
}

// Through a real listener and pool, concurrent calls of every kind decode
// what the reflection decoder decodes of the same answers.
func TestPoolWithClientCodec(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer()
	if err := srv.RegisterName("Node", FakeNode{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterName("Alloc", FakeAlloc{}); err != nil {
		t.Fatal(err)
	}
	l := drpc.NewListener(ln, srv, drpc.NewRaftLayer(ln.Addr()), nil)
	go l.Serve()
	defer l.Close()
	p := drpc.NewPoolCodec(time.Second, newClientCodec)
	defer p.Shutdown()
	addr := ln.Addr().String()

	wantPull := decodeBoth[pullAnswer](t, "pull", encode(t, testPullAnswer()))
	wantAllocs := decodeBoth[allocsAnswer](t, "allocs", encode(t, testAllocsAnswer()))
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				switch (i + j) % 4 {
				case 0:
					var got pullAnswer
					if err := p.Call(addr, "Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: "n"}, &got); err != nil || !reflect.DeepEqual(&got, wantPull) {
						errs <- fmt.Errorf("pull: %v, %s", err, dump(got))
					}
				case 1:
					var got allocsAnswer
					if err := p.Call(addr, "Alloc.GetAllocs", &structs.AllocsGetRequest{AllocIDs: []string{"a"}}, &got); err != nil || !reflect.DeepEqual(&got, wantAllocs) {
						errs <- fmt.Errorf("allocs: %v, %s", err, dump(got))
					}
				case 2:
					var got pullAnswer
					if err := p.Call(addr, "Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: "unknown"}, &got); !drpc.IsServerError(err) || err.Error() != "node not found" {
						errs <- fmt.Errorf("failed pull: %v", err)
					}
				case 3:
					var got structs.NodeUpdateResponse
					if err := p.Call(addr, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: "n"}, &got); err != nil || got.HeartbeatTTL != 10*time.Second || got.Index != 7 {
						errs <- fmt.Errorf("heartbeat: %v, %+v", err, got)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
