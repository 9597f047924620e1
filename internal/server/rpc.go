package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

const maxQueryTime = structs.MaxBlockingQueryTime

// forward routes a call that this server must not answer itself: another
// region (to one of its servers, regions.go), a consistent call while another server leads,
// or a stale read before this server's state is restored (ready.go). It
// returns handled=true when the call was answered remotely (or failed),
// false when the caller should serve it locally. With no leader it retries
// for RPCHoldTimeout and then fails with ErrNoLeader, which callers may
// retry. A leader that cannot be connected to (it just died, and this
// server has not yet noticed) is the same as none: the call was not sent,
// so it waits for the next leader rather than failing at once; so does a
// read whose connection broke after it was sent. Nothing else is sent
// again: a write that reached the leader may have been applied there
// whatever became of its answer (forwardCall).
func (s *Server) forward(method, region string, allowStale bool, args, reply any) (bool, error) {
	if region != "" && region != s.config.Region {
		return true, s.forwardRegion(region, method, args, reply)
	}
	if s.IsLeader() || (allowStale && s.stateReady()) {
		return false, nil
	}
	if rpcAuthTable[method].class == rpcServer {
		// A server-only call reaches this server in-process (its own
		// workers) or already admitted as a server's: it goes on to the
		// leader as this server's.
		setAuthToken(args, s.serverSecret())
	}
	ctx := structs.RequestContext(args)
	deadline := time.Now().Add(s.config.RPCHoldTimeout)
	for {
		addr := s.LeaderAddr()
		if addr != "" && addr != s.rpcAddr {
			err := s.forwardCall(ctx, addr, method, args, reply)
			if err == nil || time.Now().After(deadline) {
				return true, err
			}
			if !safeToResend(args, err) {
				return true, err
			}
			s.logger.Debug("leader unreachable, waiting for a leader", "leader", addr, "method", method, "error", err)
		}
		if (addr == s.rpcAddr && s.IsLeader()) || (allowStale && s.stateReady()) {
			return false, nil
		}
		if time.Now().After(deadline) {
			return true, structs.ErrNoLeader
		}
		select {
		case <-s.shutdownCh:
			return true, structs.ErrNoLeader
		case <-ctx.Done():
			return true, ctx.Err()
		case <-time.After(time.Duration(10+rnd(40)) * time.Millisecond):
		}
	}
}

// forwardCall sends one call to the leader at addr with a deadline:
// RPCForwardTimeout, plus the call's own wait when it may rightly wait on
// the leader (a blocking query's wait and its jitter, a dequeue's
// timeout). It ends early when ctx (the caller's: an HTTP client that went
// away) is done, and then the leader sees the call's stream close. A write
// the leader did not answer in time may still be applied there: its
// outcome is unknown.
func (s *Server) forwardCall(ctx context.Context, addr, method string, args, reply any) error {
	return s.forwardCallTo(ctx, "the leader", addr, method, args, reply)
}

// forwardCallTo is forwardCall to a server that is not this region's
// leader; who names it in the errors ("region \"west\"'s server").
func (s *Server) forwardCallTo(ctx context.Context, who, addr, method string, args, reply any) error {
	timeout := s.config.RPCForwardTimeout
	if w, ok := args.(structs.ServerWait); ok {
		if wait := w.ServerWait(); wait > 0 {
			timeout += wait + wait/16
		}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer context.AfterFunc(s.shutdownCtx, cancel)() // this server shutting down
	err := s.pool.CallContext(cctx, addr, method, args, reply)
	if errors.Is(err, context.Canceled) && ctx.Err() == nil && s.isShutdown() {
		if structs.IsReadRequest(args) {
			return structs.ErrNoLeader
		}
		return structs.NewErrOutcomeUnknown("server shut down while %s %s was answering %s", who, addr, method)
	}
	if errors.Is(err, droverrpc.ErrCallTimeout) && ctx.Err() == nil {
		if structs.IsReadRequest(args) {
			return fmt.Errorf("%s %s did not answer %s within %s", who, addr, method, timeout)
		}
		return structs.NewErrOutcomeUnknown("%s %s did not answer %s within %s", who, addr, method, timeout)
	}
	return err
}

// queryFn runs a read against a state snapshot, adding what it reads to ws
// and setting meta.Index.
type queryFn func(ws memdb.WatchSet, st *state.StateSnapshot) error

// queryWait is how long a blocking query with MaxQueryTime asked may
// block: at most maxQueryTime, plus up to 1/16 of random jitter so parked
// queries do not all return at once.
func queryWait(asked time.Duration) time.Duration {
	wait := asked
	if wait <= 0 || wait > maxQueryTime {
		wait = maxQueryTime
	}
	return wait + time.Duration(rnd(int64(wait/16)))
}

// blockingRPC answers a read, blocking while the result's index is not past
// MinQueryIndex, up to the query's wait time. Each run reads a snapshot
// taken between Raft entries: an answer never holds part of an entry under
// the entry's index, so a client's next ?index= query cannot sleep through
// the rest of that entry.
func (s *Server) blockingRPC(opts *structs.QueryOptions, meta *structs.QueryMeta, run queryFn) error {
	// The caller's context: a blocking query ends when its HTTP client
	// goes away or its forwarding server gives up, not only when the
	// index moves or the wait ends.
	ctx := opts.Context()
	if opts.MinQueryIndex > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, queryWait(opts.MaxQueryTime))
		defer cancel()
	}
	first := s.fsm.State()
	for {
		store := s.fsm.State()
		st, err := store.Snapshot()
		if err != nil {
			return err
		}
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		ws.Add(s.shutdownCh)
		if err := run(ws, st); err != nil {
			return err
		}
		s.setQueryMeta(meta)
		// A snapshot restore replaced the state while the query waited:
		// answer it now, whatever the restored index. The restored state
		// may stay below MinQueryIndex for long (its indexes are the
		// snapshot's), and the caller must learn what it holds now: a
		// client stops the allocations it no longer has.
		restored := store != first
		if opts.MinQueryIndex == 0 || meta.Index > opts.MinQueryIndex || restored || s.isShutdown() {
			return nil
		}
		// An index above everything the state holds, after a restore
		// replaced the live state, was given out by the state that is
		// gone: the query is answered at once (the caller learns the
		// restored index and starts over from it) instead of waiting its
		// whole time for an index only new writes will pass.
		if s.fsm.RestoredOverLiveState() {
			if latest, err := st.LatestIndex(); err == nil && opts.MinQueryIndex > latest {
				return nil
			}
		}
		if err := ws.WatchCtx(ctx); err != nil {
			if cerr := opts.Context().Err(); cerr != nil {
				return cerr // the caller went away: nobody reads the answer
			}
			return nil // timed out: answer with current data
		}
	}
}

// setQueryMeta says how fresh a locally served answer is: on the leader
// (also while it waits for its barrier: it is the one that commits) 0 and
// known; on a follower the time since it last heard from a leader, and
// whether it knows one now.
func (s *Server) setQueryMeta(m *structs.QueryMeta) {
	if s.IsLeader() || s.raft.State() == raft.Leader {
		m.KnownLeader = true
		m.LastContact = 0
		return
	}
	m.KnownLeader = s.LeaderAddr() != ""
	if lc := s.raft.LastContact(); !lc.IsZero() {
		m.LastContact = time.Since(lc)
	}
}

// maxIndex returns the largest of the given tables' indexes in a store or
// snapshot.
func maxIndex(st interface{ Index(string) (uint64, error) }, tables ...string) uint64 {
	var max uint64
	for _, t := range tables {
		if i, err := st.Index(t); err == nil && i > max {
			max = i
		}
	}
	return max
}

// safeToResend reports whether a forwarded call that failed with err may be
// sent again (to the next leader, or another server of the region): a call
// that never left (a connect error), or a read whose connection broke after
// it was sent. A write whose connection broke may have run: its outcome is
// unknown, and the error is answered.
func safeToResend(args any, err error) bool {
	return droverrpc.IsConnectError(err) || (structs.IsReadRequest(args) && droverrpc.IsConnectionLost(err))
}
