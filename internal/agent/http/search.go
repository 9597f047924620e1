package httpapi

import (
	"net/http"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"

	"github.com/drover-project/drover/internal/structs"
)

// Search answers /v1/search (ID prefix) and /v1/search/fuzzy (substring of
// names) in Nomad's shapes, on top of the list RPCs: each context is one
// list read at the request's namespace, so a search sees exactly what the
// lists show and the token's rights apply as they do there.

// searchLimit is how many matches each context returns (Nomad's default).
const searchLimit = 20

// fuzzyMinTerm is the shortest fuzzy query Nomad accepts.
const fuzzyMinTerm = 2

var prefixContexts = []contexts.Context{contexts.Jobs, contexts.Evals, contexts.Allocs, contexts.Nodes, contexts.Deployments, contexts.Namespaces}
var fuzzyContexts = []contexts.Context{contexts.Jobs, contexts.Allocs, contexts.Nodes, contexts.Groups, contexts.Tasks, contexts.Commands, contexts.Images}

// fuzzySpecJobs bounds how many job definitions one fuzzy search reads for
// the contexts found inside jobs (groups, tasks, commands, images); past it
// those contexts are marked truncated.
const fuzzySpecJobs = 1000

// searchData is what the list reads of one request returned.
type searchData struct {
	index  uint64
	jobs   []*structs.JobListStub
	allocs []*structs.AllocListStub
	nodes  []*structs.NodeListStub
	evals  []*structs.Evaluation
	deps   []*structs.Deployment
	nss    []*structs.Namespace
	specs  []*structs.Job // full jobs, for the contexts inside them
	// specsTruncated: more jobs than fuzzySpecJobs were not read.
	specsTruncated bool
}

// inSpec are the contexts found inside job definitions.
func inSpec(want map[contexts.Context]bool) bool {
	return want[contexts.Groups] || want[contexts.Tasks] || want[contexts.Commands] || want[contexts.Images]
}

// searchQuery is the list reads' query: the namespace is ?namespace=,
// else the body's (bodyNS, as Nomad reads it and as the route's ACL check
// reads it).
func (s *server) searchQuery(r *http.Request, bodyNS string) (structs.QueryOptions, error) {
	var q structs.QueryOptions
	if err := s.parseQuery(r, &q); err != nil {
		return q, err
	}
	if bodyNS != "" && r.URL.Query().Get("namespace") == "" {
		q.Namespace = bodyNS
	}
	q.MinQueryIndex, q.PerPage, q.NextToken, q.Filter, q.Prefix = 0, 0, "", "", ""
	return q, nil
}

// load reads the lists the contexts need. prefix narrows the reads that
// support it (prefix search).
func (s *server) searchLoad(q structs.QueryOptions, want map[contexts.Context]bool, prefix string) (*searchData, error) {
	d := &searchData{}
	meta := func(m structs.QueryMeta) {
		if m.Index > d.index {
			d.index = m.Index
		}
	}
	q.Prefix = prefix
	if want[contexts.Jobs] || inSpec(want) {
		var reply structs.JobListResponse
		if err := s.cfg.RPC.RPC("Job.List", &structs.JobListRequest{QueryOptions: q}, &reply); err != nil {
			return nil, err
		}
		d.jobs = reply.Jobs
		meta(reply.QueryMeta)
	}
	if want[contexts.Allocs] {
		var reply structs.AllocListResponse
		if err := s.cfg.RPC.RPC("Alloc.List", &structs.AllocListRequest{QueryOptions: q}, &reply); err != nil {
			return nil, err
		}
		d.allocs = reply.Allocations
		meta(reply.QueryMeta)
	}
	if want[contexts.Nodes] {
		var reply structs.NodeListResponse
		if err := s.cfg.RPC.RPC("Node.List", &structs.NodeListRequest{QueryOptions: q}, &reply); err != nil {
			return nil, err
		}
		d.nodes = reply.Nodes
		meta(reply.QueryMeta)
	}
	if want[contexts.Evals] {
		var reply structs.EvalListResponse
		if err := s.cfg.RPC.RPC("Eval.List", &structs.EvalListRequest{QueryOptions: q}, &reply); err != nil {
			return nil, err
		}
		d.evals = reply.Evaluations
		meta(reply.QueryMeta)
	}
	if want[contexts.Deployments] {
		var reply structs.DeploymentListResponse
		if err := s.cfg.RPC.RPC("Deployment.List", &structs.GenericRequest{QueryOptions: q}, &reply); err != nil {
			return nil, err
		}
		d.deps = reply.Deployments
		meta(reply.QueryMeta)
	}
	if want[contexts.Namespaces] {
		var reply structs.NamespaceListResponse
		if err := s.cfg.RPC.RPC("Namespace.ListNamespaces", &structs.GenericRequest{QueryOptions: q}, &reply); err != nil {
			return nil, err
		}
		d.nss = reply.Namespaces
		meta(reply.QueryMeta)
	}
	if inSpec(want) {
		for i, stub := range d.jobs {
			if i == fuzzySpecJobs {
				d.specsTruncated = true
				break
			}
			args := structs.JobSpecificRequest{JobID: stub.ID, QueryOptions: q}
			args.Namespace = stub.Namespace
			var reply structs.SingleJobResponse
			if err := s.cfg.RPC.RPC("Job.GetJob", &args, &reply); err != nil {
				return nil, err
			}
			if reply.Job != nil {
				d.specs = append(d.specs, reply.Job)
			}
		}
	}
	return d, nil
}

// searchNodesAllowed keeps nodes out of a search whose token may not read
// nodes, as Nomad: asked for alone they are a 403, within "all" they are
// left out. The node list read below is made in-process, past the RPC
// port's checks, so this is the only check.
func searchNodesAllowed(r *http.Request, asked contexts.Context, want map[contexts.Context]bool) error {
	a := requestACL(r)
	if !want[contexts.Nodes] || a == nil || a.AllowNodeRead() {
		return nil
	}
	if asked == contexts.Nodes {
		return errPermissionDenied
	}
	delete(want, contexts.Nodes)
	return nil
}

// wanted expands a request's context ("" or "all" is every supported one).
func wanted(c contexts.Context, supported []contexts.Context) (map[contexts.Context]bool, error) {
	out := map[contexts.Context]bool{}
	if c == "" || c == contexts.All {
		for _, x := range supported {
			out[x] = true
		}
		return out, nil
	}
	for _, x := range supported {
		if x == c {
			out[x] = true
			return out, nil
		}
	}
	names := make([]string, len(supported))
	for i, x := range supported {
		names[i] = string(x)
	}
	return nil, structs.NewErrCoded(400, "Context %q is not searchable here; use one of: all, %s", c, strings.Join(names, ", "))
}

// /v1/search: IDs starting with Prefix, per context.
func (s *server) searchRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var args api.SearchRequest
	if err := decodeBody(r, &args, false); err != nil {
		return nil, err
	}
	want, err := wanted(args.Context, prefixContexts)
	if err != nil {
		return nil, err
	}
	if err := searchNodesAllowed(r, args.Context, want); err != nil {
		return nil, err
	}
	q, err := s.searchQuery(r, args.Namespace)
	if err != nil {
		return nil, err
	}
	// Node IDs and others are matched by prefix; an odd-length prefix is
	// fine because matching is on the string.
	d, err := s.searchLoad(q, want, "")
	if err != nil {
		return nil, err
	}
	resp := api.SearchResponse{Matches: map[contexts.Context][]string{}, Truncations: map[contexts.Context]bool{}}
	add := func(c contexts.Context, ids []string) {
		if !want[c] {
			return
		}
		var m []string
		for _, id := range ids {
			if strings.HasPrefix(id, args.Prefix) {
				m = append(m, id)
			}
		}
		sort.Strings(m)
		resp.Truncations[c] = len(m) > searchLimit
		if len(m) > searchLimit {
			m = m[:searchLimit]
		}
		resp.Matches[c] = nonNil(m)
	}
	add(contexts.Jobs, mapIDs(d.jobs, func(j *structs.JobListStub) string { return j.ID }))
	add(contexts.Allocs, mapIDs(d.allocs, func(a *structs.AllocListStub) string { return a.ID }))
	add(contexts.Nodes, mapIDs(d.nodes, func(n *structs.NodeListStub) string { return n.ID }))
	add(contexts.Evals, mapIDs(d.evals, func(e *structs.Evaluation) string { return e.ID }))
	add(contexts.Deployments, mapIDs(d.deps, func(x *structs.Deployment) string { return x.ID }))
	add(contexts.Namespaces, mapIDs(d.nss, func(n *structs.Namespace) string { return n.Name }))
	setMeta(w, &structs.QueryMeta{Index: d.index, KnownLeader: true})
	return resp, nil
}

func mapIDs[T any](l []T, f func(T) string) []string {
	out := make([]string, len(l))
	for i, x := range l {
		out[i] = f(x)
	}
	return out
}

// /v1/search/fuzzy: names containing Text (case-insensitive), per context,
// those that start with it first.
func (s *server) searchFuzzyRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var args api.FuzzySearchRequest
	if err := decodeBody(r, &args, false); err != nil {
		return nil, err
	}
	text := strings.ToLower(strings.TrimSpace(args.Text))
	if len(text) < fuzzyMinTerm {
		return nil, structs.NewErrCoded(400, "fuzzy search query must be at least %d characters, got %d", fuzzyMinTerm, len(text))
	}
	want, err := wanted(args.Context, fuzzyContexts)
	if err != nil {
		return nil, err
	}
	if err := searchNodesAllowed(r, args.Context, want); err != nil {
		return nil, err
	}
	q, err := s.searchQuery(r, args.Namespace)
	if err != nil {
		return nil, err
	}
	d, err := s.searchLoad(q, want, "")
	if err != nil {
		return nil, err
	}
	resp := api.FuzzySearchResponse{Matches: map[contexts.Context][]api.FuzzyMatch{}, Truncations: map[contexts.Context]bool{}}
	add := func(c contexts.Context, ms []api.FuzzyMatch) {
		if !want[c] {
			return
		}
		var m []api.FuzzyMatch
		for _, x := range ms {
			if strings.Contains(strings.ToLower(x.ID), text) {
				m = append(m, x)
			}
		}
		sort.SliceStable(m, func(i, j int) bool {
			pi, pj := strings.Index(strings.ToLower(m[i].ID), text), strings.Index(strings.ToLower(m[j].ID), text)
			if pi != pj {
				return pi < pj
			}
			return m[i].ID < m[j].ID
		})
		resp.Truncations[c] = len(m) > searchLimit
		if len(m) > searchLimit {
			m = m[:searchLimit]
		}
		resp.Matches[c] = nonNil(m)
	}
	var jobs, allocs, nodes, groups, tasks, commands, images []api.FuzzyMatch
	for _, j := range d.jobs {
		jobs = append(jobs, api.FuzzyMatch{ID: j.ID, Scope: []string{j.Namespace}})
	}
	for _, a := range d.allocs {
		allocs = append(allocs, api.FuzzyMatch{ID: a.Name, Scope: []string{a.Namespace, a.ID}})
	}
	for _, n := range d.nodes {
		nodes = append(nodes, api.FuzzyMatch{ID: n.Name, Scope: []string{n.ID}})
	}
	for _, j := range d.specs {
		for _, g := range j.TaskGroups {
			groups = append(groups, api.FuzzyMatch{ID: g.Name, Scope: []string{j.Namespace, j.ID}})
			for _, t := range g.Tasks {
				scope := []string{j.Namespace, j.ID, g.Name, t.Name}
				tasks = append(tasks, api.FuzzyMatch{ID: t.Name, Scope: scope[:3]})
				if c, ok := t.Config["command"].(string); ok && c != "" {
					commands = append(commands, api.FuzzyMatch{ID: c, Scope: scope})
				}
				if im, ok := t.Config["image"].(string); ok && im != "" {
					images = append(images, api.FuzzyMatch{ID: im, Scope: scope})
				}
			}
		}
	}
	add(contexts.Jobs, jobs)
	add(contexts.Allocs, allocs)
	add(contexts.Nodes, nodes)
	add(contexts.Groups, groups)
	add(contexts.Tasks, tasks)
	add(contexts.Commands, commands)
	add(contexts.Images, images)
	if d.specsTruncated {
		for _, c := range []contexts.Context{contexts.Groups, contexts.Tasks, contexts.Commands, contexts.Images} {
			if want[c] {
				resp.Truncations[c] = true
			}
		}
	}
	setMeta(w, &structs.QueryMeta{Index: d.index, KnownLeader: true})
	return resp, nil
}
