package cli

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// The wire shape of Drover's plan explain (structs.PlanExplain); the CLI
// decodes it from JSON and never imports server types.
type planExplain struct {
	TaskGroups map[string]*tgExplain
}

type tgExplain struct {
	NodesEvaluated int
	NodesScored    int
	Filtered       map[string]int
	Exhausted      map[string]int
	Nodes          []*nodeExplain
}

type nodeExplain struct {
	NodeID   string
	NodeName string
	Scores   map[string]float64
	Final    float64
	Placed   int
}

// explainPlan is a plan request that asks for Explain. The api client
// cannot add query parameters to a write, so the flags go in the body,
// which the plan endpoint also reads.
func explainPlan(client *api.Client, job *api.Job, opts *api.PlanOptions, all bool) (*api.JobPlanResponse, *planExplain, error) {
	in := struct {
		api.JobPlanRequest
		Explain, ExplainAll bool
	}{api.JobPlanRequest{Job: job, Diff: opts.Diff, PolicyOverride: opts.PolicyOverride}, true, all}
	var out struct {
		api.JobPlanResponse
		Explain *planExplain
	}
	if _, err := client.Raw().Write("/v1/job/"+url.PathEscape(*job.ID)+"/plan", &in, &out, nil); err != nil {
		return nil, nil, err
	}
	return &out.JobPlanResponse, out.Explain, nil
}

// rankerOrder is the chain's order; rankers not listed follow by name.
var rankerOrder = []string{"binpack", "job-anti-affinity", "node-reschedule-penalty", "node-affinity", "allocation-spread", "preemption"}

// formatExplain prints, per task group, the filters by how many nodes they
// removed and the ranked nodes best first with one column per ranker.
func formatExplain(e *planExplain, verbose bool) string {
	var b strings.Builder
	b.WriteString("Placement explain:")
	if e == nil || len(e.TaskGroups) == 0 {
		b.WriteString("\n- No placements were attempted.")
		return b.String()
	}
	for _, name := range sortedKeys(e.TaskGroups) {
		g := e.TaskGroups[name]
		fmt.Fprintf(&b, "\n\nTask Group %q: %d nodes evaluated, %d ranked\n", name, g.NodesEvaluated, g.NodesScored)
		b.WriteString(formatExplainFilters(g))
		b.WriteString("\n\n")
		b.WriteString(formatExplainNodes(g, verbose))
	}
	return b.String()
}

func formatExplainFilters(g *tgExplain) string {
	type row struct {
		reason string
		nodes  int
	}
	var rows []row
	for r, n := range g.Filtered {
		rows = append(rows, row{r, n})
	}
	for d, n := range g.Exhausted {
		rows = append(rows, row{"exhausted: " + d, n})
	}
	if len(rows) == 0 {
		return "No node was filtered out."
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].nodes != rows[j].nodes {
			return rows[i].nodes > rows[j].nodes
		}
		return rows[i].reason < rows[j].reason
	})
	lines := []string{"Filtered By|Nodes"}
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%s|%d", r.reason, r.nodes))
	}
	return formatList(lines)
}

func formatExplainNodes(g *tgExplain, verbose bool) string {
	if len(g.Nodes) == 0 {
		return "No node passed every filter."
	}
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		for k := range n.Scores {
			seen[k] = true
		}
	}
	var rankers []string
	for _, k := range rankerOrder {
		if seen[k] {
			rankers = append(rankers, k)
			delete(seen, k)
		}
	}
	rankers = append(rankers, sortedKeys(seen)...)

	nodes := append([]*nodeExplain(nil), g.Nodes...)
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Final > nodes[j].Final })
	lines := []string{"Node ID|Node Name|" + strings.Join(append(rankers, "Final", "Placed"), "|")}
	for _, n := range nodes {
		cols := []string{shortID(n.NodeID, verbose), n.NodeName}
		for _, r := range rankers {
			if s, ok := n.Scores[r]; ok {
				cols = append(cols, fmt.Sprintf("%6.3f", s))
			} else {
				cols = append(cols, "-")
			}
		}
		cols = append(cols, fmt.Sprintf("%6.3f", n.Final), fmt.Sprint(n.Placed))
		lines = append(lines, strings.Join(cols, "|"))
	}
	out := formatList(lines)
	if g.NodesScored > len(g.Nodes) {
		out += fmt.Sprintf("\n(top %d of %d ranked nodes; -verbose shows all)", len(g.Nodes), g.NodesScored)
	}
	return out
}
