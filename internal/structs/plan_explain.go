package structs

// PlanExplain is Drover's answer to "why did the scheduler choose these
// nodes?" for a dry-run plan (`job plan -explain`, `?explain=true`). Nomad
// has no equivalent; it rides next to the unchanged plan response fields.
type PlanExplain struct {
	// TaskGroups is keyed by task group name.
	TaskGroups map[string]*TGExplain
}

// TGExplain explains the placements of one task group.
type TGExplain struct {
	// NodesEvaluated counts the distinct nodes the placement chain looked at.
	NodesEvaluated int
	// Filtered counts, per reason, the distinct nodes removed before
	// ranking: a constraint in its string form ("${attr.kernel.name} =
	// windows"), "missing drivers", "distinct_hosts", or a readiness reason
	// ("node not ready", "node ineligible", "node draining", "datacenter",
	// "node pool") for nodes that never entered the chain.
	Filtered map[string]int
	// Exhausted counts, per dimension ("memory", "cpu", "network: reserved
	// port collision http=8080", ...), the distinct feasible nodes without
	// room for one more allocation of the group.
	Exhausted map[string]int
	// NodesScored counts the distinct nodes ranked; Nodes may hold fewer.
	NodesScored int
	// Nodes are the scored nodes, best final score first (top 20 unless all
	// were asked for).
	Nodes []*NodeExplain
}

// NodeExplain is one ranked node: its score from each ranker (named as in
// AllocMetric.ScoreMetaData) and the normalised final score, as of the last
// time the scheduler ranked it for the group.
type NodeExplain struct {
	NodeID   string
	NodeName string
	Scores   map[string]float64
	Final    float64
	// Placed is how many allocations of the group the plan puts on the node.
	Placed int
}

// ExplainTopNodes is how many ranked nodes per group an explain keeps
// unless all are asked for.
const ExplainTopNodes = 20
