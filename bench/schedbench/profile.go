package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"time"
)

// fetchProfile saves the server's /debug/pprof/<path> (the server runs with
// enable_debug when a profile is asked for) to file.
func fetchProfile(ctx context.Context, httpAddr, path, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, httpAddr+"/debug/pprof/"+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET /debug/pprof/%s: %s: %s (does the server run with enable_debug = true?)", path, resp.Status, b)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profiler takes the CPU profile from the first submit for a fixed time and
// the heap profile once every allocation is placed (its peak).
type profiler struct {
	httpAddr          string
	cpuFile, heapFile string
	cpuSeconds        time.Duration
	cpuDone, heapDone chan error
	heapStarted       bool
}

func (p *profiler) startCPU(ctx context.Context) {
	if p.cpuFile == "" {
		return
	}
	p.cpuDone = make(chan error, 1)
	secs := max(1, int(p.cpuSeconds.Seconds()))
	go func() { p.cpuDone <- fetchProfile(ctx, p.httpAddr, fmt.Sprintf("profile?seconds=%d", secs), p.cpuFile) }()
}

// placed is called with each poll; it takes the heap profile once.
func (p *profiler) placed(ctx context.Context, all bool) {
	if p.heapFile == "" || p.heapStarted || !all {
		return
	}
	p.heapStarted = true
	p.heapDone = make(chan error, 1)
	go func() { p.heapDone <- fetchProfile(ctx, p.httpAddr, "heap", p.heapFile) }()
}

// wait returns the first error of the profiles taken.
func (p *profiler) wait() error {
	var first error
	for _, ch := range []chan error{p.cpuDone, p.heapDone} {
		if ch == nil {
			continue
		}
		if err := <-ch; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// startSelfProfile starts this process's CPU profile: the node simulator
// runs here, so this is where its cost shows. stop writes the file.
func startSelfProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
