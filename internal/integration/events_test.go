package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// seenEvent is what a subscriber noticed of one event.
type seenEvent struct {
	Index            uint64
	Topic, Type, Key string
}

// A subscriber that disconnects in the middle of 10,000 job registrations
// and resumes from the index after the last batch it read receives every
// event exactly once, in index order: the same sequence as a subscriber
// that never disconnected.
func TestEventStreamResumeExactlyOnce(t *testing.T) {
	const jobs = 10000
	a := startAgent(t, "", []string{"-dev"}, map[string]any{
		"log_level": "ERROR",
		"client":    map[string]any{"enabled": false},
		// Large enough to hold every entry of the test: resuming can only
		// replay what the server still buffers.
		"server": map[string]any{"event_buffer_size": 200000},
	})
	a.waitReady(false)
	topics := map[api.Topic][]string{api.TopicJob: {"*"}, api.TopicEvaluation: {"*"}}

	// collect appends the events of frames from ch until stop says so;
	// it returns the index of the last frame taken. It gives up when no
	// frame comes for a minute (a stalled stream), however long the
	// whole read takes on a loaded host.
	collect := func(ch <-chan *api.Events, out *[]seenEvent, stop func() bool) uint64 {
		var last uint64
		const stall = time.Minute
		deadline := time.NewTimer(stall)
		defer deadline.Stop()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for !stop() {
			select {
			case <-tick.C:
				// stop may turn true without a new frame (the reference
				// finished after this subscriber caught up).
			case f, ok := <-ch:
				if !ok || f.Err != nil {
					t.Errorf("stream ended: %v", f)
					return last
				}
				if f.Index <= last {
					t.Errorf("frame index %d after %d", f.Index, last)
				}
				last = f.Index
				deadline.Reset(stall)
				for _, e := range f.Events {
					if e.Index != f.Index {
						t.Errorf("event index %d in frame %d", e.Index, f.Index)
					}
					*out = append(*out, seenEvent{e.Index, string(e.Topic), e.Type, e.Key})
				}
			case <-deadline.C:
				t.Errorf("no frame for %s reading the stream (%d events)", stall, len(*out))
				return last
			}
		}
		return last
	}
	registered := func(evs []seenEvent) int {
		n := 0
		for _, e := range evs {
			if e.Topic == "Job" && e.Type == "JobRegistered" {
				n++
			}
		}
		return n
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	refCh, err := a.client.EventStream().Stream(ctx, topics, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx1, cancel1 := context.WithCancel(ctx)
	subCh, err := a.client.EventStream().Stream(ctx1, topics, 0, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Writers.
	var next, done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= jobs {
					return
				}
				job := rawExecJob(fmt.Sprintf("ev-%05d", i), "service", 1, "true")
				if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		}()
	}

	// The reference reads in the background, without interruption.
	var ref []seenEvent
	var refLastSeen atomic.Uint64
	refDone := make(chan uint64, 1)
	go func() {
		l := collect(refCh, &ref, func() bool { return registered(ref) >= jobs })
		refLastSeen.Store(l)
		refDone <- l
	}()

	// The subscriber reads half, disconnects, lets more writes happen,
	// and resumes after the last batch it read.
	var sub []seenEvent
	last := collect(subCh, &sub, func() bool { return registered(sub) >= jobs/2 })
	cancel1()
	at := done.Load()
	waitFor(t, time.Minute, "writes while disconnected", func() bool { return done.Load() >= at+300 || done.Load() == jobs })
	subCh, err = a.client.EventStream().Stream(ctx, topics, last+1, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The resumed subscriber reads while the writes go on, as a real one
	// does: a reader that stops reading is dropped by the server.
	subDone := make(chan struct{})
	go func() {
		defer close(subDone)
		collect(subCh, &sub, func() bool {
			rl := refLastSeen.Load()
			return rl != 0 && len(sub) > 0 && sub[len(sub)-1].Index >= rl
		})
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("register: %v", err)
	}
	refLast := <-refDone
	<-subDone

	// Compare up to the reference's last batch.
	trim := func(evs []seenEvent) []seenEvent {
		for i, e := range evs {
			if e.Index > refLast {
				return evs[:i]
			}
		}
		return evs
	}
	ref, sub = trim(ref), trim(sub)
	if len(sub) != len(ref) {
		t.Fatalf("resumed subscriber saw %d events, the uninterrupted one %d", len(sub), len(ref))
	}
	for i := range ref {
		if sub[i] != ref[i] {
			t.Fatalf("event %d: resumed %+v, uninterrupted %+v", i, sub[i], ref[i])
		}
	}
	perJob := map[string]int{}
	for _, e := range sub {
		if e.Topic == "Job" && e.Type == "JobRegistered" {
			perJob[e.Key]++
		}
	}
	for i := 0; i < jobs; i++ {
		if n := perJob[fmt.Sprintf("ev-%05d", i)]; n != 1 {
			t.Fatalf("job ev-%05d registered %d times in the stream", i, n)
		}
	}
	t.Logf("%d events up to index %d; disconnected after index %d", len(sub), refLast, last)
}

// A client-only agent serves /v1/event/stream by forwarding to its server:
// its reader sees the same events, once each, in order.
func TestEventStreamThroughClientOnlyAgent(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server":    map[string]any{"bootstrap_expect": 1},
		"log_level": "ERROR",
	})
	srv.waitReady(false)
	cli := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"log_level": "ERROR",
	})
	waitFor(t, 20*time.Second, "client agent's HTTP API", func() bool {
		_, err := cli.client.Agent().Self()
		return err == nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := cli.client.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicJob: {"*"}}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	for i := 0; i < n; i++ {
		if _, _, err := srv.client.Jobs().Register(rawExecJob(fmt.Sprintf("fw-%02d", i), "batch", 1, "true"), nil); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	var last uint64
	deadline := time.After(60 * time.Second)
	for len(seen) < n {
		select {
		case f := <-ch:
			if f == nil || f.Err != nil {
				t.Fatalf("stream ended: %v", f)
			}
			if f.Index <= last {
				t.Fatalf("frame %d after %d", f.Index, last)
			}
			last = f.Index
			for _, e := range f.Events {
				if e.Type == "JobRegistered" {
					seen[e.Key]++
				}
			}
		case <-deadline:
			t.Fatalf("saw %d of %d registrations", len(seen), n)
		}
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("%s registered %d times in the stream", k, c)
		}
	}
}

// When the server stops, a reader's stream ends cleanly: the official
// client reports io.EOF (as Nomad's TestEvent_Stream expects), not a cut
// connection.
func TestEventStreamEndsWithEOFOnShutdown(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"log_level": "ERROR", "client": map[string]any{"enabled": false}})
	a.waitReady(false)
	if _, _, err := a.client.Jobs().Register(rawExecJob("eof", "service", 1, "true"), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := a.client.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicEvaluation: {}}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := <-ch; f == nil || f.Err != nil || len(f.Events) == 0 || f.Events[0].Topic != "Evaluation" {
		t.Fatalf("first frame: %+v", f)
	}
	// Interrupt only: the cleanup's stop waits for the exit (a stop in a
	// goroutine could log into this test after it returned).
	if err := a.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case f, ok := <-ch:
			if !ok {
				t.Fatal("stream closed without an error")
			}
			if f.Err != nil {
				if !errors.Is(f.Err, io.EOF) {
					t.Fatalf("stream ended with %v, want io.EOF", f.Err)
				}
				return
			}
		case <-deadline:
			t.Fatal("stream did not end")
		}
	}
}
