package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
)

// eventReaders are -event-subscribers readers of the server's event stream
// (every topic, every namespace), reading as fast as they can: what the
// stream costs the server during the run. A reader the server drops
// (fell behind its buffer) resumes after the last batch it read, and is
// counted.
type eventReaders struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	frames atomic.Int64
	bytes  atomic.Int64
	drops  atomic.Int64
	errs   atomic.Int64
}

func startEventReaders(ctx context.Context, httpAddr string, n int) *eventReaders {
	ctx, cancel := context.WithCancel(ctx)
	r := &eventReaders{cancel: cancel}
	for range n {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			var next uint64
			for ctx.Err() == nil {
				last, dropped, err := r.read(ctx, httpAddr, next)
				if last > 0 {
					next = last + 1
				}
				if dropped {
					r.drops.Add(1)
				} else if err != nil && ctx.Err() == nil {
					r.errs.Add(1)
					return
				}
			}
		}()
	}
	return r
}

// read follows one connection from index; it returns the last index read
// and whether the server dropped the reader.
func (r *eventReaders) read(ctx context.Context, httpAddr string, index uint64) (uint64, bool, error) {
	url := fmt.Sprintf("%s/v1/event/stream?namespace=*&index=%d", httpAddr, index)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, false, fmt.Errorf("event stream: %s", resp.Status)
	}
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	var last uint64
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long frame: read the rest of it.
			rest, err2 := br.ReadBytes('\n')
			line, err = append(append([]byte(nil), line...), rest...), err2
		}
		if err != nil {
			return last, false, err
		}
		r.bytes.Add(int64(len(line)))
		if bytes.HasPrefix(line, []byte(`{"Error"`)) {
			return last, true, nil
		}
		if bytes.HasPrefix(line, []byte(`{"Index":`)) {
			var head struct{ Index uint64 }
			// Only the head: the index comes first in every frame.
			end := bytes.IndexByte(line, ',')
			if end > 0 && json.Unmarshal(append(line[:end:end], '}'), &head) == nil {
				last = head.Index
			}
			r.frames.Add(1)
		}
	}
}

func (r *eventReaders) stop(res *result) {
	r.cancel()
	r.wg.Wait()
	res.EventFrames = r.frames.Load()
	res.EventMB = round(float64(r.bytes.Load())/(1<<20), 1)
	res.EventDrops = r.drops.Load()
	res.EventErrors = r.errs.Load()
}
