package server

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Registrations arriving while an entry is written go out together in the
// next entry; each caller gets its own outcome and the entry's index, only
// once the entry is written.
func TestJobRegisterBatcher_GroupCommitPerRequestErrors(t *testing.T) {
	type write struct {
		reqs    []*structs.JobRegisterRequest
		release chan struct{}
	}
	writes := make(chan *write)
	shutdown := make(chan struct{})
	defer close(shutdown)
	idx := uint64(10)
	b := &jobRegisterBatcher{shutdown: shutdown, kick: make(chan struct{}, 1),
		write: func(reqs []*structs.JobRegisterRequest) (uint64, []error, error) {
			w := &write{reqs: reqs, release: make(chan struct{})}
			writes <- w
			<-w.release
			idx++
			errs := make([]error, len(reqs))
			for i, r := range reqs {
				if strings.HasPrefix(r.Job.ID, "bad") {
					errs[i] = errors.New("refused " + r.Job.ID)
				}
			}
			return idx, errs, nil
		}}
	go b.run()

	type result struct {
		id  string
		idx uint64
		err error
	}
	results := make(chan result, 16)
	apply := func(id string) {
		i, err := b.Apply(&structs.JobRegisterRequest{Job: &structs.Job{ID: id}})
		results <- result{id, i, err}
	}
	go apply("first")
	w1 := <-writes
	if len(w1.reqs) != 1 {
		t.Fatalf("first entry has %d registrations", len(w1.reqs))
	}
	ids := []string{"a", "bad-1", "b", "c"}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); apply(id) }()
	}
	waitFor(t, 5*time.Second, "registrations queued behind the entry in flight", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.pending) == 1 && len(b.pending[0].reqs) == len(ids)
	})
	select {
	case r := <-results:
		t.Fatalf("%s answered before its entry was written", r.id)
	default:
	}
	close(w1.release)
	if r := <-results; r.id != "first" || r.idx != 11 || r.err != nil {
		t.Fatalf("first: %+v", r)
	}
	w2 := <-writes
	if len(w2.reqs) != len(ids) {
		t.Fatalf("second entry has %d registrations, want %d", len(w2.reqs), len(ids))
	}
	close(w2.release)
	wg.Wait()
	for range ids {
		r := <-results
		if r.idx != 12 {
			t.Fatalf("%s got index %d, want 12", r.id, r.idx)
		}
		if (r.err != nil) != (r.id == "bad-1") {
			t.Fatalf("%s: error %v", r.id, r.err)
		}
		if r.err != nil && r.err.Error() != "refused bad-1" {
			t.Fatalf("bad-1 got another request's error: %v", r.err)
		}
	}
}

// Concurrent registrations through the endpoint: an invalid one fails alone
// with its 400 message; every other gets the JobModifyIndex and EvalID the
// state holds for it.
func TestJobRegister_ConcurrentBatchedRegistrations(t *testing.T) {
	s := testServer(t, nil)
	const n = 24
	type result struct {
		resp structs.JobRegisterResponse
		err  error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			job := testJob(fmt.Sprintf("job-%d", i), 1)
			if i == 7 {
				job.TaskGroups[0].Count = -1 // invalid
			}
			results[i].err = s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &results[i].resp)
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		if i == 7 {
			// In-process RPC carries the coded error as text (the HTTP
			// layer turns it into the status and message).
			if r.err == nil || !strings.Contains(r.err.Error(), "400") ||
				!strings.Contains(r.err.Error(), `Task group "web": Count must not be negative`) {
				t.Fatalf("invalid job: %v", r.err)
			}
			if j, _ := s.State().JobByID(nil, "default", "job-7"); j != nil {
				t.Fatal("invalid job was stored")
			}
			continue
		}
		if r.err != nil {
			t.Fatalf("job-%d: %v", i, r.err)
		}
		job, _ := s.State().JobByID(nil, "default", fmt.Sprintf("job-%d", i))
		if job == nil || job.JobModifyIndex != r.resp.JobModifyIndex || r.resp.Index != r.resp.JobModifyIndex {
			t.Fatalf("job-%d: reply %+v, stored %+v", i, r.resp, job)
		}
		ev, _ := s.State().EvalByID(nil, r.resp.EvalID)
		if ev == nil || ev.JobID != job.ID || ev.CreateIndex != r.resp.EvalCreateIndex {
			t.Fatalf("job-%d: eval %+v, reply %+v", i, ev, r.resp)
		}
	}
}

// A job registered again and again, each time after the previous
// registration returned, gets one version per registration in order, and the
// stored job is the last one sent.
func TestJobRegister_SuccessiveRegistrationsKeepOrder(t *testing.T) {
	s := testServer(t, nil)
	// Noise: other jobs registering concurrently share the entries.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var resp structs.JobRegisterResponse
				s.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob(fmt.Sprintf("noise-%d-%d", g, i%3), 0)}, &resp)
			}
		}()
	}
	var last uint64
	for v := 0; v < 10; v++ {
		job := testJob("ordered", 0)
		job.Meta = map[string]string{"v": fmt.Sprint(v)}
		var resp structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.JobModifyIndex <= last {
			t.Fatalf("registration %d: JobModifyIndex %d not after %d", v, resp.JobModifyIndex, last)
		}
		last = resp.JobModifyIndex
		stored, _ := s.State().JobByID(nil, "default", "ordered")
		if stored == nil || stored.Meta["v"] != fmt.Sprint(v) || stored.Version != uint64(v) {
			t.Fatalf("after registration %d the stored job is %+v", v, stored)
		}
	}
	close(stop)
	wg.Wait()
}
