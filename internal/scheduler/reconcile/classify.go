package reconcile

import (
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// filterOldTerminal drops, for batch jobs, finished allocations of older
// job versions: a new version runs anew. Service jobs keep everything.
func filterOldTerminal(batch bool, job *structs.Job, all allocSet) (kept, ignored allocSet) {
	if !batch {
		return all, nil
	}
	kept, ignored = make(allocSet, len(all)), make(allocSet)
	for id, a := range all {
		if a.TerminalStatus() && olderVersion(a, job) {
			ignored[id] = a
		} else {
			kept[id] = a
		}
	}
	return kept, ignored
}

// buckets are a group's allocations by where they stand.
type buckets struct {
	untainted     allocSet // run (or finished) where they are
	migrate       allocSet // asked to move (drain)
	lost          allocSet // node down or gone: stop as lost and replace
	disconnecting allocSet // node disconnected, within the group's window
	reconnecting  allocSet // node back after a disconnect
	ignore        allocSet // stopped replacements of disconnected allocs
	expiring      allocSet // unknown for longer than the group's window
}

// classify sorts a group's allocations into buckets: the first rule that
// matches wins.
//
//   - reconnecting: failed while disconnected (and still desired to run),
//     or back on a ready node after being unknown;
//   - on a disconnected node: running ones are disconnecting when the group
//     tolerates disconnects (disconnect.lost_after or max_client_disconnect),
//     lost otherwise; pending ones are lost;
//   - terminal: stopped replacements of reconnecting allocs are ignored,
//     terminal canaries asked to migrate migrate, the rest are untainted
//     (the reschedule step sorts them out);
//   - asked to migrate: migrate;
//   - unknown for longer than the window: expiring;
//   - unknown within the window: untainted (kept, not replaced twice);
//   - on a ready or untainted node: untainted; on a down or gone node:
//     lost; anything else (draining, ineligible): untainted.
func classify(all allocSet, tg *structs.TaskGroup, tainted map[string]*structs.Node, now time.Time) buckets {
	b := buckets{untainted: allocSet{}, migrate: allocSet{}, lost: allocSet{}, disconnecting: allocSet{},
		reconnecting: allocSet{}, ignore: allocSet{}, expiring: allocSet{}}
	tolerates := supportsDisconnect(tg)
	for id, a := range all {
		reconnect := false
		if tolerates && (a.ClientStatus == structs.AllocClientStatusUnknown ||
			a.ClientStatus == structs.AllocClientStatusRunning || a.ClientStatus == structs.AllocClientStatusFailed) {
			reconnect = needsToReconnect(a)
		}
		if reconnect && a.DesiredStatus == structs.AllocDesiredStatusRun && a.ClientStatus == structs.AllocClientStatusFailed {
			b.reconnecting[id] = a
			continue
		}
		node, isTainted := tainted[a.NodeID]
		if node != nil && node.Status == structs.NodeStatusDisconnected {
			switch {
			case !tolerates:
				if !a.TerminalStatus() {
					b.lost[id] = a
					continue
				}
			case a.ClientStatus == structs.AllocClientStatusRunning:
				b.disconnecting[id] = a
				continue
			case a.ClientStatus == structs.AllocClientStatusPending:
				b.lost[id] = a
				continue
			}
		}
		if a.TerminalStatus() && !reconnect {
			switch {
			case tolerates && a.ServerTerminalStatus():
				b.ignore[id] = a
			case isCanary(a) && boolSet(a.DesiredTransition.Migrate):
				b.migrate[id] = a
			default:
				b.untainted[id] = a
			}
			continue
		}
		if boolSet(a.DesiredTransition.Migrate) {
			b.migrate[id] = a
			continue
		}
		if tolerates && expired(a, tg, now) {
			b.expiring[id] = a
			continue
		}
		if tolerates && a.ClientStatus == structs.AllocClientStatusUnknown && a.DesiredStatus == structs.AllocDesiredStatusRun {
			b.untainted[id] = a
			continue
		}
		if tolerates && reconnect && a.ClientStatus == structs.AllocClientStatusFailed && a.DesiredStatus == structs.AllocDesiredStatusStop {
			b.ignore[id] = a
			continue
		}
		if !isTainted || node != nil && node.Status == structs.NodeStatusReady {
			if reconnect {
				b.reconnecting[id] = a
			} else {
				b.untainted[id] = a
			}
			continue
		}
		if node == nil || node.Status == structs.NodeStatusDown {
			b.lost[id] = a
			continue
		}
		b.untainted[id] = a
	}
	return b
}
