package sim

import "github.com/drover-project/drover/internal/structs"

// allocsAnswer is what a simulated node decodes of an Alloc.GetAllocs answer
// (structs.AllocsGetResponse): the same bytes arrive over the same RPC as
// for a real client, but only the fields the simulator acts on are
// materialised; the rest (the task configs, resources, constraints... of
// every allocation's job) is skipped, which is most of the simulator's
// decoding work. nodesim's codec decodes these answers by hand
// (answer_decode.go); go-msgpack decodes the same values by reflection,
// matching fields by name, and the tests hold the two to each other.
type allocsAnswer struct {
	Allocs []*wireAlloc
	wireQueryMeta
}

// pullAnswer is what a simulated node decodes of a Node.GetClientAllocs
// answer (structs.NodeClientAllocsResponse), asked with ChangedAllocs: the
// alloc→AllocModifyIndex map and the changed allocations, lean as in
// allocsAnswer.
type pullAnswer struct {
	Allocs  map[string]uint64
	Changed []*wireAlloc
	wireQueryMeta
}

// wireQueryMeta is the part of structs.QueryMeta the simulator uses. The
// answers must not embed structs.QueryMeta itself: its generated codec
// methods would be promoted to them, and the codec would then decode a
// whole answer as a QueryMeta (skipping the allocations).
type wireQueryMeta struct {
	Index uint64
}

// wireAlloc is the part of a structs.Allocation the simulator uses.
type wireAlloc struct {
	ID               string
	Namespace        string
	JobID            string
	TaskGroup        string
	DesiredStatus    string
	ClientStatus     string
	AllocModifyIndex uint64
	DeploymentID     string
	Job              *wireJob
}

// wireJob is the part of a structs.Job the simulator uses.
type wireJob struct {
	Type           string
	JobModifyIndex uint64
	TaskGroups     []*wireGroup
}

type wireGroup struct {
	Name  string
	Tasks []*wireTask
}

type wireTask struct{ Name string }

func (a *wireAlloc) serverTerminal() bool {
	return a.DesiredStatus == structs.AllocDesiredStatusStop || a.DesiredStatus == structs.AllocDesiredStatusEvict
}

func (a *wireAlloc) terminal() bool { return a.serverTerminal() || isTerminal(a.ClientStatus) }
