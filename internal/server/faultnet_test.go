package server

import (
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// faults decides, for each Raft RPC one server sends another, whether it is
// dropped or delayed: random drops and delays on every link, plus isolated
// servers whose every link is down (hashicorp/raft's fuzzy tests inject
// faults the same way, in the transport).
type faults struct {
	mu       sync.Mutex
	isolated map[string]bool
	drop     float64       // probability that a call fails
	delay    float64       // probability that a call is delayed
	maxDelay time.Duration // delays are uniform in [0, maxDelay)
	dropped  int
	delayed  int
}

var errInjectedDrop = errors.New("injected fault: message dropped")

func newFaults() *faults { return &faults{isolated: map[string]bool{}} }

func (f *faults) isolate(addr string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on {
		f.isolated[addr] = true
	} else {
		delete(f.isolated, addr)
	}
}

func (f *faults) setRandom(drop, delay float64, maxDelay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop, f.delay, f.maxDelay = drop, delay, maxDelay
}

// before is called before each call from -> to: an error drops it.
func (f *faults) before(from, to string) error {
	f.mu.Lock()
	if f.isolated[from] || f.isolated[to] || (f.drop > 0 && rand.Float64() < f.drop) {
		f.dropped++
		f.mu.Unlock()
		return errInjectedDrop
	}
	var d time.Duration
	if f.delay > 0 && f.maxDelay > 0 && rand.Float64() < f.delay {
		d = rand.N(f.maxDelay)
		f.delayed++
	}
	f.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
	return nil
}

// faultTransport is a Raft transport whose outgoing calls pass through
// faults. Replication is never pipelined, so every AppendEntries is one
// call the faults see.
type faultTransport struct {
	raft.Transport
	f    *faults
	self string
}

func (t *faultTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

func (t *faultTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if err := t.f.before(t.self, string(target)); err != nil {
		return err
	}
	return t.Transport.AppendEntries(id, target, args, resp)
}

func (t *faultTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if err := t.f.before(t.self, string(target)); err != nil {
		return err
	}
	return t.Transport.RequestVote(id, target, args, resp)
}

func (t *faultTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if err := t.f.before(t.self, string(target)); err != nil {
		return err
	}
	return t.Transport.InstallSnapshot(id, target, args, resp, data)
}

func (t *faultTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if err := t.f.before(t.self, string(target)); err != nil {
		return err
	}
	return t.Transport.TimeoutNow(id, target, args, resp)
}

// Close closes the wrapped transport (raft.WithClose).
func (t *faultTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}
