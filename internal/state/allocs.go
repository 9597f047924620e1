package state

import (
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// AllocByID returns an allocation, or nil.
func (s *reader) AllocByID(ws memdb.WatchSet, id string) (*structs.Allocation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableAllocs, "id", id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Allocation), nil
}

// AllocsByIDs returns the allocations with the given IDs that exist, in the
// order asked, read in one transaction.
func (s *reader) AllocsByIDs(ws memdb.WatchSet, ids []string) ([]*structs.Allocation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	out := make([]*structs.Allocation, 0, len(ids))
	for _, id := range ids {
		raw, err := first(txn, ws, tableAllocs, "id", id)
		if err != nil {
			return nil, err
		}
		if raw != nil {
			out = append(out, raw.(*structs.Allocation))
		}
	}
	return out, nil
}

// Allocs iterates every allocation.
func (s *reader) Allocs(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableAllocs, "id")
}

// AllocsByIDPrefix iterates allocations whose ID starts with prefix in
// namespace ("*" = all namespaces).
func (s *reader) AllocsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return prefixIter(txn, ws, tableAllocs, namespace, prefix)
}

func collectAllocs(iter memdb.ResultIterator, keep func(*structs.Allocation) bool) []*structs.Allocation {
	var out []*structs.Allocation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if a := raw.(*structs.Allocation); keep == nil || keep(a) {
			out = append(out, a)
		}
	}
	return out
}

// AllocsByJob returns a job's allocations. Unless anyCreateIndex is set,
// only allocations of the job's current incarnation are returned (a purged
// and re-registered job does not see its predecessor's allocations).
func (s *reader) AllocsByJob(ws memdb.WatchSet, namespace, jobID string, anyCreateIndex bool) ([]*structs.Allocation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	var job *structs.Job
	if !anyCreateIndex {
		raw, err := first(txn, ws, tableJobs, "id", namespace, jobID)
		if err != nil {
			return nil, err
		}
		if raw != nil {
			job = raw.(*structs.Job)
		}
	}
	iter, err := get(txn, ws, tableAllocs, "job", namespace, jobID)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return collectAllocs(iter, nil), nil
	}
	return collectAllocs(iter, func(a *structs.Allocation) bool {
		return a.Job != nil && a.Job.CreateIndex == job.CreateIndex
	}), nil
}

// AllocsByNode returns every allocation on a node: the live ones, then the
// terminal ones, each in ID order.
func (s *reader) AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := get(txn, ws, tableAllocs, "node_terminal_prefix", nodeKeyPrefix(nodeID))
	if err != nil {
		return nil, err
	}
	return collectAllocs(iter, nil), nil
}

// nodeKeyPrefix is the argument of a node_terminal_prefix read that matches
// exactly nodeID's allocations: the string indexer ends a value with NUL
// and strips that one NUL from a prefix argument, so the argument carries
// the NUL that ends the NodeID field, and a node whose ID merely extends
// this one ("n1", "n10") does not match.
func nodeKeyPrefix(nodeID string) string { return nodeID + "\x00" }

// ClientPull is what a client's pull needs, read in one transaction.
type ClientPull struct {
	// Node is the node; nil if unknown (then nothing else is read).
	Node *structs.Node
	// All are the node's allocations (in index order, with distinct IDs);
	// the client's table is their IDs with their AllocModifyIndex
	// (NodeClientAllocsResponse.SetAllocsOf). The slice is the state
	// memo's, shared by every pull of the same version of the node's
	// allocations: read it, never modify it.
	All []*structs.Allocation
	// Index is the node's pull index: the newest AllocModifyIndex, or the
	// last deletion of one of its allocations if later. Only server-side
	// changes move it (see NodeAllocsWatchCh).
	Index uint64
	// Changed are the allocations whose AllocModifyIndex is above the
	// changedAfter the read was asked for (none if not asked), in index
	// order.
	Changed []*structs.Allocation
}

// NodeClientAllocs reads a client's pull for nodeID; with withChanged it
// also returns the allocations changed after changedAfter (the client's
// previous pull index), so the client need not fetch them separately.
// The node's allocations come from the store's per-node memo (see
// nodeAllocsMemo), which the alloc writes keep current: a pull costs the
// node lookup, the snapshot's alloc-write number (which tells whether the
// memo's entry is the snapshot's without a prefix seek, see
// node_allocs_seq.go) and a walk of the memoised slice for the changed
// allocations.
func (s *reader) NodeClientAllocs(nodeID string, changedAfter uint64, withChanged bool) (ClientPull, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := txn.First(tableNodes, "id", nodeID)
	if err != nil {
		return ClientPull{}, fmt.Errorf("state: node lookup: %w", err)
	}
	if raw == nil {
		return ClientPull{}, nil
	}
	pull := ClientPull{Node: raw.(*structs.Node)}
	deleted, err := txn.First(tableIndex, "id", nodeAllocsDeletedKey(nodeID))
	if err != nil {
		return ClientPull{}, fmt.Errorf("state: index lookup: %w", err)
	}
	if deleted != nil {
		pull.Index = deleted.(*IndexEntry).Value
	}
	v, err := s.nodeAllocs.read(txn, nodeID, readAllocSeq(txn))
	if err != nil {
		return ClientPull{}, err
	}
	cv := v.clientView()
	pull.All = v.all
	pull.Index = max(pull.Index, cv.max)
	if withChanged && cv.max > changedAfter {
		for _, a := range v.all {
			if a.AllocModifyIndex > changedAfter {
				pull.Changed = append(pull.Changed, a)
			}
		}
	}
	return pull, nil
}

// AllocsByNodeTerminal returns a node's allocations whose TerminalStatus()
// equals terminal.
func (s *reader) AllocsByNodeTerminal(ws memdb.WatchSet, nodeID string, terminal bool) ([]*structs.Allocation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := get(txn, ws, tableAllocs, "node_terminal", nodeID, terminal)
	if err != nil {
		return nil, err
	}
	return collectAllocs(iter, nil), nil
}

// AllocsByEval returns the allocations an evaluation created or updated.
// There is no index by eval (every alloc write would pay for it to serve
// this one API read): the eval's job's allocations are filtered, or, for an
// eval already garbage collected, every allocation.
func (s *reader) AllocsByEval(ws memdb.WatchSet, evalID string) ([]*structs.Allocation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableEvals, "id", evalID)
	if err != nil {
		return nil, err
	}
	var iter memdb.ResultIterator
	if raw != nil {
		e := raw.(*structs.Evaluation)
		iter, err = get(txn, ws, tableAllocs, "job", e.Namespace, e.JobID)
	} else {
		iter, err = get(txn, ws, tableAllocs, "id")
	}
	if err != nil {
		return nil, err
	}
	return collectAllocs(iter, func(a *structs.Allocation) bool { return a.EvalID == evalID }), nil
}

// UpsertAllocs applies server-side allocation writes (placements and
// updates). New allocations get CreateIndex; every written allocation gets
// AllocModifyIndex = ModifyIndex = index. For existing allocations the
// client-owned fields are kept, except that the server may mark an
// allocation lost or unknown.
func (s *StateStore) UpsertAllocs(index uint64, allocs []*structs.Allocation) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	jobs := jobKeys{}
	sums := newDerivedRows()
	for _, a := range allocs {
		if err := upsertAllocTxn(txn, index, a, nil, jobs, sums); err != nil {
			return err
		}
	}
	if err := sums.write(txn, index); err != nil {
		return err
	}
	if err := bumpIndex(txn, index, tableAllocs); err != nil {
		return err
	}
	if err := refreshJobStatuses(txn, index, jobs, false); err != nil {
		return err
	}
	s.commitAllocs(txn)
	return nil
}

func allocLookup(txn *memdb.Txn, id string) (*structs.Allocation, error) {
	raw, err := txn.First(tableAllocs, "id", id)
	if err != nil {
		return nil, fmt.Errorf("state: alloc lookup: %w", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.Allocation), nil
}

// upsertAllocTxn writes a copy of in (see UpsertAllocs). job, unless nil,
// replaces in.Job in the copy: a plan's placements point at the stored
// object of their job version, and making that the only copy of each
// placement saves one of the struct (456 bytes) per placement.
func upsertAllocTxn(txn *memdb.Txn, index uint64, in *structs.Allocation, job *structs.Job, jobs jobKeys, sums *derivedRows) error {
	if in == nil || in.ID == "" {
		return fmt.Errorf("state: upsert alloc: missing alloc or alloc ID")
	}
	a := *in
	if job != nil {
		a.Job = job
	}
	if a.Namespace == "" {
		a.Namespace = structs.DefaultNamespace
	}
	ex, err := allocLookup(txn, a.ID)
	if err != nil {
		return err
	}
	a.ModifyIndex = index
	a.AllocModifyIndex = index
	if ex == nil {
		a.CreateIndex = index
		if a.Job == nil {
			raw, err := txn.First(tableJobs, "id", a.Namespace, a.JobID)
			if err != nil {
				return fmt.Errorf("state: job lookup: %w", err)
			}
			if raw == nil {
				return fmt.Errorf("state: alloc %s has no job and job %s/%s does not exist", a.ID, a.Namespace, a.JobID)
			}
			a.Job = raw.(*structs.Job)
		}
	} else {
		a.CreateIndex = ex.CreateIndex
		a.TaskStates = ex.TaskStates
		a.NetworkStatus = ex.NetworkStatus
		// The client owns health: a scheduler's copy may predate it. An
		// allocation moved into another deployment (an in-place update)
		// starts that one without health.
		if ex.DeploymentStatus != nil && ex.DeploymentID == a.DeploymentID {
			a.DeploymentStatus = ex.DeploymentStatus
		}
		if a.ClientStatus != structs.AllocClientStatusLost && a.ClientStatus != structs.AllocClientStatusUnknown {
			a.ClientStatus = ex.ClientStatus
			a.ClientDescription = ex.ClientDescription
		}
		if a.Job == nil {
			a.Job = ex.Job
		}
		if a.NextAllocation == "" {
			a.NextAllocation = ex.NextAllocation
		}
	}
	return writeAlloc(txn, index, ex, &a, jobs, sums)
}

// writeAlloc inserts alloc (replacing existing, nil if new) and maintains
// everything derived from it: summary, deployment counters, the previous
// allocation's NextAllocation.
func writeAlloc(txn *memdb.Txn, index uint64, ex, a *structs.Allocation, jobs jobKeys, sums *derivedRows) error {
	if err := sums.transition(txn, ex, a); err != nil {
		return err
	}
	if err := sums.deployment(txn, ex, a); err != nil {
		return err
	}
	if err := txn.Insert(tableAllocs, a); err != nil {
		return fmt.Errorf("state: alloc insert: %w", err)
	}
	if a.ClientTerminalStatus() && (ex == nil || !ex.ClientTerminalStatus()) {
		// Marked lost by a plan (its node is down): its services are gone.
		if err := deleteAllocServices(txn, index, a.ID); err != nil {
			return err
		}
	}
	if a.PreviousAllocation != "" {
		prev, err := allocLookup(txn, a.PreviousAllocation)
		if err != nil {
			return err
		}
		if prev != nil && prev.NextAllocation != a.ID {
			c := *prev
			c.NextAllocation = a.ID
			c.ModifyIndex = index
			if err := txn.Insert(tableAllocs, &c); err != nil {
				return fmt.Errorf("state: alloc insert: %w", err)
			}
		}
	}
	jobs.add(a.Namespace, a.JobID)
	return nil
}

// UpdateAllocsFromClient applies what clients observed. Only the
// client-owned fields (ClientStatus, ClientDescription, TaskStates,
// DeploymentStatus health, NetworkStatus, ModifyTime) are taken; the server's
// fields and AllocModifyIndex are left alone. Unknown allocations are
// ignored. Each affected node records LastAllocUpdateIndex = index when it
// was not already past the node's LastMissedHeartbeatIndex.
//
// It is the hottest write of a busy cluster (every placement comes back at
// least as "running"), so it does only what a client change can require:
// one copy and insert per allocation, each job summary copied and written
// once per call however many of its allocations changed, job statuses
// recomputed only for jobs whose allocations became terminal or live, and
// no previous-allocation link (a client never changes it).
func (s *StateStore) UpdateAllocsFromClient(index uint64, allocs []*structs.Allocation) error {
	_, err := s.UpdateAllocsFromClientFreed(index, allocs)
	return err
}

// UpdateAllocsFromClientFreed is UpdateAllocsFromClient that also returns
// the nodes (in the order of allocs) on which an allocation became
// client-terminal, i.e. whose capacity this update freed.
func (s *StateStore) UpdateAllocsFromClientFreed(index uint64, allocs []*structs.Allocation) (freed []string, err error) {
	txn := s.db.Txn(true)
	defer txn.Abort()
	jobs := jobKeys{}
	sums := newDerivedRows()
	nodes := map[string]bool{}
	var nodeOrder []string
	freedSeen := map[string]bool{}
	for _, in := range allocs {
		if in == nil {
			continue
		}
		ex, err := allocLookup(txn, in.ID)
		if err != nil {
			return nil, err
		}
		if ex == nil {
			continue
		}
		c := *ex
		c.ClientStatus = in.ClientStatus
		c.ClientDescription = in.ClientDescription
		c.TaskStates = in.TaskStates
		c.NetworkStatus = in.NetworkStatus
		if in.DeploymentStatus != nil {
			ds := structs.AllocDeploymentStatus{}
			if ex.DeploymentStatus != nil {
				ds = *ex.DeploymentStatus
			}
			// A client repeats its health with every later update: only
			// a change moves the health's ModifyIndex, which the
			// deployment watcher compares with its evaluations.
			if !sameHealth(ex.DeploymentStatus, in.DeploymentStatus) {
				ds.ModifyIndex = index
			}
			ds.Healthy = in.DeploymentStatus.Healthy
			ds.Timestamp = in.DeploymentStatus.Timestamp
			c.DeploymentStatus = &ds
		}
		if in.ModifyTime != 0 {
			c.ModifyTime = in.ModifyTime
		}
		c.ModifyIndex = index
		if ex.ClientStatus != c.ClientStatus {
			if err := sums.transition(txn, ex, &c); err != nil {
				return nil, err
			}
		}
		if err := sums.deployment(txn, ex, &c); err != nil {
			return nil, err
		}
		if err := txn.Insert(tableAllocs, &c); err != nil {
			return nil, fmt.Errorf("state: alloc insert: %w", err)
		}
		if !ex.ClientTerminalStatus() && c.ClientTerminalStatus() {
			if err := deleteAllocServices(txn, index, c.ID); err != nil {
				return nil, err
			}
		}
		if !ex.ClientTerminalStatus() && c.ClientTerminalStatus() && !freedSeen[c.NodeID] {
			freedSeen[c.NodeID] = true
			freed = append(freed, c.NodeID)
		}
		if ex.TerminalStatus() != c.TerminalStatus() {
			jobs.add(c.Namespace, c.JobID)
		}
		if !nodes[c.NodeID] {
			nodes[c.NodeID] = true
			nodeOrder = append(nodeOrder, c.NodeID)
		}
	}
	if err := sums.write(txn, index); err != nil {
		return nil, err
	}
	nodesWritten := false
	for _, id := range nodeOrder {
		raw, err := txn.First(tableNodes, "id", id)
		if err != nil {
			return nil, fmt.Errorf("state: node lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		// LastAllocUpdateIndex is only ever compared with
		// LastMissedHeartbeatIndex (a node back from a missed heartbeat
		// stays initializing until it has pushed its allocs). Once it is
		// past that index a newer value answers the comparison the same
		// way, now and after any later miss (whose index is newer than
		// every update applied so far), so the node is rewritten only
		// when the answer changes. Rewriting it on every update cost a
		// node copy per client batch and moved the nodes index, which
		// the scheduler's shared ready-node list is keyed on.
		ex := raw.(*structs.Node)
		if ex.LastAllocUpdateIndex > ex.LastMissedHeartbeatIndex {
			continue
		}
		n := *ex
		n.LastAllocUpdateIndex = index
		if err := txn.Insert(tableNodes, &n); err != nil {
			return nil, fmt.Errorf("state: node insert: %w", err)
		}
		nodesWritten = true
	}
	if nodesWritten {
		if err := bumpIndex(txn, index, tableNodes); err != nil {
			return nil, err
		}
	}
	if err := bumpIndex(txn, index, tableAllocs); err != nil {
		return nil, err
	}
	if err := refreshJobStatuses(txn, index, jobs, false); err != nil {
		return nil, err
	}
	s.commitAllocs(txn)
	return freed, nil
}

// derivedRows accumulates what one write (a client update, a plan, a set of
// server-side alloc upserts) changes in rows derived from allocations: each
// job's summary and each deployment is copied on its first change and
// written once by write, not copied and inserted once per allocation (a
// plan of 1,000 placements into one deployment was 1,000 copies of it).
// Nothing in a write reads those rows between its allocations and write.
type derivedRows struct {
	sums map[structs.NamespacedID]*batchedSummary
	deps map[string]*structs.Deployment // copies changed by this write
}

func newDerivedRows() *derivedRows {
	return &derivedRows{sums: map[structs.NamespacedID]*batchedSummary{}}
}

type batchedSummary struct {
	sum     *structs.JobSummary // a copy; nil when the job has none
	changed bool
}

// transition accounts for a replacing ex (nil when a is new: it leaves the
// queued count) in the job's summary: a moves between client-status
// counters. Allocations of an older incarnation of the job, or of a group
// the job no longer has, are not counted. The summary is copied once per
// job and written by write.
func (b *derivedRows) transition(txn *memdb.Txn, ex, a *structs.Allocation) error {
	if ex != nil && ex.ClientStatus == a.ClientStatus {
		return nil
	}
	key := structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
	cs, ok := b.sums[key]
	if !ok {
		stored, err := summaryFor(txn, a.Namespace, a.JobID)
		if err != nil {
			return err
		}
		cs = &batchedSummary{}
		if stored != nil {
			cs.sum = stored.Copy()
		}
		b.sums[key] = cs
	}
	sum := cs.sum
	if sum == nil || (a.Job != nil && a.Job.CreateIndex != sum.CreateIndex) {
		return nil
	}
	tg, ok := sum.Summary[a.TaskGroup]
	if !ok {
		return nil
	}
	if ex == nil {
		if tg.Queued > 0 {
			tg.Queued--
		}
	} else if p := countOf(&tg, ex.ClientStatus); p != nil && *p > 0 {
		*p--
	}
	if p := countOf(&tg, a.ClientStatus); p != nil {
		*p++
	}
	sum.Summary[a.TaskGroup] = tg
	cs.changed = true
	return nil
}

// write stores the changed summaries in job order (determinism).
func (b *derivedRows) write(txn *memdb.Txn, index uint64) error {
	keys := make([]structs.NamespacedID, 0, len(b.sums))
	for k, cs := range b.sums {
		if cs.changed {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Namespace != keys[j].Namespace {
			return keys[i].Namespace < keys[j].Namespace
		}
		return keys[i].ID < keys[j].ID
	})
	for _, k := range keys {
		if err := putSummary(txn, index, b.sums[k].sum); err != nil {
			return err
		}
	}
	return b.writeDeployments(txn, index)
}

func nodeAllocsDeletedKey(nodeID string) string { return "allocs_deleted/" + nodeID }

// sameHealth reports whether two deployment statuses hold the same health
// decided at the same time.
func sameHealth(a, b *structs.AllocDeploymentStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	if (a.Healthy == nil) != (b.Healthy == nil) || (a.Healthy != nil && *a.Healthy != *b.Healthy) {
		return false
	}
	return a.Timestamp.Equal(b.Timestamp)
}
