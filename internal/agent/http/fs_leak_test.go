package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// burstFS answers a log read with a burst of large frames and returns at
// once, as a non-followed read (or the log of a finished task) does.
type burstFS struct{ *fakeFS }

func (burstFS) FSLogs(ctx context.Context, allocID, task, logType, origin string, offset int64, follow bool, out chan<- *api.StreamFrame) error {
	for i := 0; i < 40; i++ {
		select {
		case out <- &api.StreamFrame{Data: make([]byte, 256<<10)}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// streamGoroutines counts the goroutines of streamFrames (the handler and
// its helpers).
func streamGoroutines() int {
	buf := make([]byte, 1<<22)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "(*server).streamFrames.func")
}

// A reader that goes away while the handler flushes what the producer
// queued before it returned (Ctrl-C on `alloc logs`, a closed UI tab)
// leaves no goroutine behind. Before, the drainer waited for a completion
// the handler had already taken: one goroutine per such reader, for good.
func TestStreamReaderGoneMidFlushLeavesNoGoroutine(t *testing.T) {
	srv := httptest.NewServer(NewHandler(Config{FS: burstFS{&fakeFS{}}, Stats: fakeStats{id: "n"}, Allocs: allocSet{"a1": true}}))
	defer srv.Close()
	before := streamGoroutines()
	for i := 0; i < 8; i++ {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /v1/client/fs/logs/a1?task=web&type=stdout&plain=true HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		buf := make([]byte, 64<<10)
		// Read slowly (the producer finishes and the handler flushes the
		// queue), then reset the connection.
		for got := 0; got < 6<<20; {
			n, err := br.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got += n
			time.Sleep(time.Millisecond)
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	deadline := time.Now().Add(20 * time.Second)
	for streamGoroutines() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d stream goroutines left after 8 readers went away mid-flush", streamGoroutines()-before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
