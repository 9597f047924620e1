package blockedevals

import (
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// recorder is an Enqueuer that records what it receives.
type recorder struct {
	mu  sync.Mutex
	got map[string]string // eval ID → token
}

func newRecorder() *recorder { return &recorder{got: map[string]string{}} }

func (r *recorder) EnqueueAll(m map[*structs.Evaluation]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for e, tok := range m {
		r.got[e.ID] = tok
	}
}

func (r *recorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for id := range r.got {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second) // bounds a hang only: the race step runs on 2 loaded cores
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitIDs(t *testing.T, r *recorder, want ...string) {
	t.Helper()
	sort.Strings(want)
	eventually(t, "enqueued "+sortedString(want), func() bool { return sortedString(r.ids()) == sortedString(want) })
}

func sortedString(s []string) string {
	out := ""
	for _, x := range s {
		out += x + ","
	}
	return out
}

// settle gives the outbox goroutine time to deliver anything it wrongly
// received (used only to assert that nothing more arrives).
func settle() { time.Sleep(20 * time.Millisecond) }

func blockedEval(id, job string, elig map[string]bool) *structs.Evaluation {
	return &structs.Evaluation{
		ID: id, Namespace: "default", JobID: job, Type: structs.JobTypeService, Priority: 50,
		Status: structs.EvalStatusBlocked, TriggeredBy: structs.EvalTriggerQueuedAllocs,
		ClassEligibility: elig, SnapshotIndex: 10, CreateIndex: 10,
	}
}

func setup(t *testing.T) (*BlockedEvals, *recorder) {
	r := newRecorder()
	b := New(r, nil)
	b.SetEnabled(true)
	t.Cleanup(func() { b.SetEnabled(false) })
	return b, r
}

func TestUnblockByClassRespectsIneligibility(t *testing.T) {
	b, r := setup(t)
	b.Block(blockedEval("a", "ja", map[string]bool{"c1": true, "c2": false}))
	b.Block(blockedEval("b", "jb", map[string]bool{"c2": false}))
	if s := b.Stats(); s.TotalBlocked != 2 || s.TotalCaptured != 2 {
		t.Fatalf("stats = %+v", s)
	}

	b.Unblock("c2", 20) // ineligible for both
	settle()
	if len(r.ids()) != 0 {
		t.Fatalf("ineligible class released %v", r.ids())
	}
	b.Unblock("c1", 21) // eligible for a, unknown for b
	waitIDs(t, r, "a", "b")
	if s := b.Stats(); s.TotalBlocked != 0 {
		t.Fatalf("released evals still tracked: %+v", s)
	}
}

func TestUnknownClassUnblocksButKnownIneligibleStays(t *testing.T) {
	b, r := setup(t)
	b.Block(blockedEval("a", "ja", map[string]bool{"c1": false}))
	b.Block(blockedEval("b", "jb", map[string]bool{"c2": false}))
	b.Unblock("c1", 20)
	waitIDs(t, r, "b")
	if s := b.Stats(); s.TotalBlocked != 1 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestEscapedUnblockedByAnyClass(t *testing.T) {
	b, r := setup(t)
	e := blockedEval("esc", "je", map[string]bool{"c1": false})
	e.EscapedComputedClass = true
	b.Block(e)
	b.Block(blockedEval("cap", "jc", map[string]bool{"c1": false}))
	if s := b.Stats(); s.TotalEscaped != 1 || s.TotalCaptured != 1 {
		t.Fatalf("stats = %+v", s)
	}
	b.Unblock("c1", 20)
	waitIDs(t, r, "esc")
}

func TestDuplicatesNewerReplacesOlder(t *testing.T) {
	b, r := setup(t)
	older := blockedEval("old", "web", map[string]bool{"c1": true})
	newer := blockedEval("new", "web", map[string]bool{"c1": true})
	newer.CreateIndex = 11
	b.Block(older)
	b.Block(newer)
	select {
	case <-b.DuplicatesNotify():
	case <-time.After(5 * time.Second):
		t.Fatal("no duplicate notification")
	}
	d := b.Duplicates()
	if len(d) != 1 || d[0].ID != "old" {
		t.Fatalf("duplicates = %v", d)
	}
	// An even older eval arriving late is itself the duplicate.
	stale := blockedEval("stale", "web", nil)
	stale.CreateIndex = 5
	b.Block(stale)
	if d := b.Duplicates(); len(d) != 1 || d[0].ID != "stale" {
		t.Fatalf("duplicates = %v", d)
	}
	if s := b.Stats(); s.TotalBlocked != 1 || s.TotalDuplicates != 0 {
		t.Fatalf("stats = %+v", s)
	}
	b.Unblock("c1", 20)
	waitIDs(t, r, "new")
}

func TestMissedUnblock(t *testing.T) {
	b, r := setup(t)
	b.Unblock("c1", 100)

	eligOld := blockedEval("elig-old", "j1", map[string]bool{"c1": true})
	eligOld.SnapshotIndex = 50 // scheduled before the unblock: missed it
	eligNew := blockedEval("elig-new", "j2", map[string]bool{"c1": true})
	eligNew.SnapshotIndex = 150 // saw the new capacity and still blocked
	inelig := blockedEval("inelig", "j3", map[string]bool{"c1": false})
	inelig.SnapshotIndex = 50 // the unblock could not help it
	unknown := blockedEval("unknown", "j4", map[string]bool{"c9": false})
	unknown.SnapshotIndex = 50 // c1 appeared after it was scheduled
	esc := blockedEval("esc", "j5", nil)
	esc.EscapedComputedClass = true
	esc.SnapshotIndex = 50

	for _, e := range []*structs.Evaluation{eligOld, eligNew, inelig, unknown, esc} {
		b.Block(e)
	}
	waitIDs(t, r, "elig-old", "unknown", "esc")
	if s := b.Stats(); s.TotalBlocked != 2 {
		t.Fatalf("stats = %+v, want elig-new and inelig tracked", s)
	}
}

func TestReblockKeepsToken(t *testing.T) {
	b, r := setup(t)
	b.Reblock(blockedEval("a", "ja", nil), "tok-1")
	b.Unblock("c1", 20)
	waitIDs(t, r, "a")
	r.mu.Lock()
	tok := r.got["a"]
	r.mu.Unlock()
	if tok != "tok-1" {
		t.Fatalf("token = %q", tok)
	}
}

func TestUnblockFailedAndUntrack(t *testing.T) {
	b, r := setup(t)
	mp := blockedEval("maxplans", "j1", map[string]bool{"c1": false})
	mp.TriggeredBy = structs.EvalTriggerMaxPlans
	b.Block(mp)
	b.Block(blockedEval("capacity", "j2", map[string]bool{"c1": false}))
	b.Block(blockedEval("gone", "j3", nil))
	b.Untrack("default", "j3")
	b.UnblockFailed()
	waitIDs(t, r, "maxplans")
	b.Unblock("c2", 30) // would release "gone" if it were still tracked
	waitIDs(t, r, "maxplans", "capacity")
	settle()
	if got := r.ids(); len(got) != 2 {
		t.Fatalf("untracked eval released: %v", got)
	}
}

func TestDisableFlushes(t *testing.T) {
	b, r := setup(t)
	b.Block(blockedEval("a", "ja", nil))
	b.SetEnabled(false)
	b.Unblock("c1", 20)
	b.Block(blockedEval("b", "jb", nil))
	b.SetEnabled(true)
	if s := b.Stats(); s.TotalBlocked != 0 {
		t.Fatalf("stats after re-enable = %+v", s)
	}
	// Unblock indexes are per term too: nothing is "missed" from the old term.
	e := blockedEval("c", "jc", nil)
	e.SnapshotIndex = 1
	b.Block(e)
	settle()
	if len(r.ids()) != 0 {
		t.Fatalf("released %v", r.ids())
	}
}

// blockingEnqueuer never returns, like a broker wedged behind a lock.
type blockingEnqueuer struct {
	entered chan struct{}
	release chan struct{}
}

func (q *blockingEnqueuer) EnqueueAll(map[*structs.Evaluation]string) {
	select {
	case q.entered <- struct{}{}:
	default:
	}
	<-q.release
}

// The FSM calls Unblock and Block on Raft's apply path: they must return even
// when the broker never does.
func TestUnblockNeverBlocksOnSlowBroker(t *testing.T) {
	q := &blockingEnqueuer{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(q.release)
	b := New(q, nil)
	b.SetEnabled(true)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 10000; i++ {
			e := blockedEval("e"+strconv.Itoa(i), "job"+strconv.Itoa(i), nil)
			e.SnapshotIndex = uint64(i)
			b.Block(e)
			b.Unblock("c1", uint64(i+1))
			b.UnblockFailed()
		}
		b.SetEnabled(false) // leadership lost while the broker is wedged
	}()
	select {
	case <-q.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the broker was never called")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Block/Unblock/SetEnabled blocked behind a stuck broker")
	}
}

func TestReblockTokenSurvivesEarlierUntokenedBlock(t *testing.T) {
	b, r := setup(t)
	e := blockedEval("e1", "j", map[string]bool{"c1": true})
	b.Block(e)            // what the FSM reports
	b.Reblock(e, "tok-1") // what the Reblock RPC reports
	b.Unblock("c1", 10)
	eventually(t, "release with the delivery token", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.got["e1"] == "tok-1"
	})
}
