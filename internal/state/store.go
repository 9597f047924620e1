package state

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// ErrAbandoned is returned by SnapshotMinIndex when the store was replaced
// (Raft snapshot restore) while waiting: callers retry on the new store.
var ErrAbandoned = errors.New("state store abandoned")

// StateStore is the server's replicated state. All methods are safe for
// concurrent use; writes are serialised by memdb.
//
// Its read methods are those of the embedded reader, which StateSnapshot
// embeds too; its write methods are its own, so a snapshot has none. A
// write into a snapshot would share the store's memos (ready_nodes.go,
// node_allocs.go) while numbering itself from the snapshot's older write
// sequence, and would close the watch channels of radix nodes the
// snapshot shares with the store: the compiler forbids it, and a
// snapshot's database refuses write transactions as well (txnDB). A dry
// run that must write (job plan) takes a Scratch copy, which shares
// nothing with the store.
type StateStore struct {
	reader

	// gate keeps snapshots between Raft entries (entry_gate.go).
	gate *entryGate
}

// reader is what every read needs: the database and the memos shared by a
// store and its snapshots. All read methods are defined on it and no write
// method is.
type reader struct {
	db txnDB

	// abandon is shared with snapshots so a blocking query on a snapshot
	// also wakes up when the store is replaced.
	abandon *abandonCh

	// ready memoises the ready-node list per nodes table version (ready_nodes.go)
	// and nodeAllocs each node's allocations (node_allocs.go); both are
	// shared with snapshots.
	ready      *readyMemo
	nodeAllocs *nodeAllocsMemo
}

type abandonCh struct {
	once sync.Once
	ch   chan struct{}
}

// StateSnapshot is a point-in-time, read-only view of the store: it has
// every read method of StateStore and no write method.
type StateSnapshot struct {
	reader
}

// NewStateStore returns an empty store holding only the default namespace
// and the built-in node pools "all" and "default".
func NewStateStore() (*StateStore, error) {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("state: building schema: %w", err)
	}
	memo := &nodeAllocsMemo{}
	s := &StateStore{reader{db: txnDB{MemDB: db, watch: newNodeWatch(), memo: memo, entry: &entryChanges{}}, abandon: &abandonCh{ch: make(chan struct{})},
		ready: &readyMemo{}, nodeAllocs: memo}, &entryGate{}}
	txn := db.Txn(true)
	defer txn.Abort()
	if err := txn.Insert(tableNamespaces, &structs.Namespace{
		Name:        structs.DefaultNamespace,
		Description: "Default shared namespace",
		CreateIndex: 1,
		ModifyIndex: 1,
	}); err != nil {
		return nil, fmt.Errorf("state: inserting default namespace: %w", err)
	}
	for _, p := range structs.BuiltinNodePools() {
		p.CreateIndex, p.ModifyIndex = 1, 1
		if err := txn.Insert(tableNodePools, p); err != nil {
			return nil, fmt.Errorf("state: inserting node pool %q: %w", p.Name, err)
		}
	}
	if err := bumpIndex(txn, 1, tableNamespaces, tableNodePools); err != nil {
		return nil, err
	}
	txn.Commit()
	return s, nil
}

// Snapshot returns an O(1) point-in-time, read-only view, taken between
// Raft entries: if an entry is being applied, it waits for its end
// (entry_gate.go).
func (s *StateStore) Snapshot() (*StateSnapshot, error) {
	db := s.gate.snapshotDB(s.db.MemDB)
	return &StateSnapshot{reader{db: txnDB{MemDB: db, readOnly: true}, abandon: s.abandon, ready: s.ready,
		nodeAllocs: s.nodeAllocs}}, nil
}

// Scratch returns a private, writable copy of the store as of now, for dry
// runs that write a candidate change and schedule against it (job plan).
// Writes to it are seen by nobody else; it shares no memo with s (so they
// cannot be numbered into s's memos) and no node watch, and it is never
// abandoned. Reads of it do not use s's memos either: it is for one-off
// passes, not for the hot path.
func (s *StateStore) Scratch() (*StateStore, error) {
	// Its own root: the database handed over at an entry's end may be
	// shared by several waiting snapshots.
	db := s.gate.snapshotDB(s.db.MemDB).Snapshot()
	return &StateStore{reader{db: txnDB{MemDB: db}, abandon: &abandonCh{ch: make(chan struct{})},
		ready: &readyMemo{}, nodeAllocs: &nodeAllocsMemo{}}, &entryGate{}}, nil
}

// SnapshotMinIndex waits until the store has applied index, then returns a
// snapshot. It blocks on the index table's watch channel, not by polling.
func (s *StateStore) SnapshotMinIndex(ctx context.Context, index uint64) (*StateSnapshot, error) {
	for {
		txn := s.db.Txn(false)
		iter, err := txn.Get(tableIndex, "id")
		if err != nil {
			txn.Abort()
			return nil, err
		}
		ws := memdb.NewWatchSet()
		ws.Add(iter.WatchCh())
		ws.Add(s.AbandonCh())
		latest := maxIndex(iter)
		txn.Abort()
		if latest >= index {
			return s.Snapshot()
		}
		select {
		case <-s.AbandonCh():
			return nil, ErrAbandoned
		default:
		}
		if err := ws.WatchCtx(ctx); err != nil {
			return nil, fmt.Errorf("timed out waiting for state index %d (at %d): %w", index, latest, err)
		}
	}
}

func maxIndex(iter memdb.ResultIterator) uint64 {
	var max uint64
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if v := raw.(*IndexEntry).Value; v > max {
			max = v
		}
	}
	return max
}

// LatestIndex is the highest index over all tables.
func (s *reader) LatestIndex() (uint64, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := txn.Get(tableIndex, "id")
	if err != nil {
		return 0, err
	}
	return maxIndex(iter), nil
}

// Index is the Raft index of the last write to table (0 if never written).
func (s *reader) Index(table string) (uint64, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := txn.First(tableIndex, "id", table)
	if err != nil {
		return 0, fmt.Errorf("state: index lookup %q: %w", table, err)
	}
	if raw == nil {
		return 0, nil
	}
	return raw.(*IndexEntry).Value, nil
}

// Indexes iterates the index table (used by FSM snapshots).
func (s *reader) Indexes() (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return txn.Get(tableIndex, "id")
}

// AbandonCh is closed when the store is replaced by a snapshot restore.
func (s *reader) AbandonCh() <-chan struct{} { return s.abandon.ch }

// Abandon closes AbandonCh, waking every blocking query on this store.
func (s *StateStore) Abandon() { s.abandon.once.Do(func() { close(s.abandon.ch) }) }

// bumpIndex records index as the last write to each table.
func bumpIndex(txn *memdb.Txn, index uint64, tables ...string) error {
	for _, t := range tables {
		raw, err := txn.First(tableIndex, "id", t)
		if err != nil {
			return fmt.Errorf("state: index lookup %q: %w", t, err)
		}
		if raw != nil && raw.(*IndexEntry).Value >= index {
			continue
		}
		if err := txn.Insert(tableIndex, &IndexEntry{Key: t, Value: index}); err != nil {
			return fmt.Errorf("state: index update %q: %w", t, err)
		}
	}
	return nil
}

// first runs txn.FirstWatch and adds the watch channel to ws.
func first(txn *memdb.Txn, ws memdb.WatchSet, table, index string, args ...any) (any, error) {
	ch, raw, err := txn.FirstWatch(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("state: %s lookup: %w", table, err)
	}
	ws.Add(ch)
	return raw, nil
}

// get runs txn.Get and adds the iterator's watch channel to ws.
func get(txn *memdb.Txn, ws memdb.WatchSet, table, index string, args ...any) (memdb.ResultIterator, error) {
	iter, err := txn.Get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("state: %s lookup: %w", table, err)
	}
	ws.Add(iter.WatchCh())
	return iter, nil
}

// prefixIter returns table rows whose ID starts with prefix in namespace
// ("*" = any namespace). Tables are keyed by ID ("id" index).
func prefixIter(txn *memdb.Txn, ws memdb.WatchSet, table, namespace, prefix string) (memdb.ResultIterator, error) {
	iter, err := get(txn, ws, table, "id_prefix", prefix)
	if err != nil {
		return nil, err
	}
	if namespace == "*" {
		return iter, nil
	}
	return memdb.NewFilterIterator(iter, func(raw any) bool {
		return namespaceOf(raw) != namespace
	}), nil
}

func namespaceOf(raw any) string {
	switch o := raw.(type) {
	case *structs.Evaluation:
		return o.Namespace
	case *structs.Allocation:
		return o.Namespace
	case *structs.Deployment:
		return o.Namespace
	case *structs.Job:
		return o.Namespace
	}
	return ""
}
