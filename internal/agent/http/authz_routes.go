package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/drover-project/drover/internal/acl"
)

// needKind is what a route requires of the caller's token.
type needKind int

const (
	kindPublic        needKind = iota // no token needed (status, health, metrics, login)
	kindAnyToken                      // any valid token, anonymous included
	kindManagement                    // a management token
	kindNamespace                     // one of caps in the request's (or object's) namespace
	kindNamespaceAny                  // any capability in the namespace the path names
	kindNodeRead                      // node { policy = read }
	kindNodeWrite                     // node { policy = write }
	kindAgentRead                     // agent { policy = read }
	kindAgentWrite                    // agent { policy = write }
	kindOperatorRead                  // operator { policy = read }
	kindOperatorWrite                 // operator { policy = write }
	kindEventStream                   // per topic (allowEventTopics)
	kindNodePool                      // caps on the node pool the path names (and node:read if nodeRead)
	kindPluginList                    // plugin { policy = list } (or read)
	kindPluginRead                    // plugin { policy = read }
)

// listFilter says how a list answer is filtered for non-management tokens.
type listFilter int

const (
	filterNone       listFilter = iota
	filterWildcard              // ?namespace=*: keep elements in namespaces with caps
	filterAlways                // always keep elements in namespaces with caps
	filterNamespaces            // namespaces list: keep those the token has any capability in
	filterNodePools             // node pool list: keep the pools the token may read
)

type need struct {
	kind       needKind
	caps       []string
	wildcardOK bool   // namespace "*" allowed; the answer is filtered
	objectNS   string // "alloc", "eval", "deployment": check in the object's namespace
	filter     listFilter
	nodeRead   bool // kindNodePool: node:read too
	jobBody    bool // without ?namespace=, the namespace is the body's Job.Namespace
	bodyNS     bool // without ?namespace=, the namespace is the body's Namespace
	// poolField: kindNodePool reads the pool's name from this top-level
	// field of the JSON body instead of the path ("" in the body: default).
	poolField string
}

// nsSearch is ns for the search routes, whose body names the namespace.
func nsSearch(caps ...string) need {
	return need{kind: kindNamespace, caps: caps, bodyNS: true, wildcardOK: true}
}

// nsJob is ns for the routes whose body is {"Job": ...}.
func nsJob(caps ...string) need { return need{kind: kindNamespace, caps: caps, jobBody: true} }

func nodePool(capability string) need { return need{kind: kindNodePool, caps: []string{capability}} }

var (
	needPublic      = need{kind: kindPublic}
	needAnyToken    = need{kind: kindAnyToken}
	needManagement  = need{kind: kindManagement}
	needNodeRead    = need{kind: kindNodeRead}
	needNodeWrite   = need{kind: kindNodeWrite}
	needAgentRead   = need{kind: kindAgentRead}
	needAgentWrite  = need{kind: kindAgentWrite}
	needOperRead    = need{kind: kindOperatorRead}
	needOperWrite   = need{kind: kindOperatorWrite}
	needEventStream = need{kind: kindEventStream}
)

func ns(caps ...string) need { return need{kind: kindNamespace, caps: caps} }

// nsList is a namespace list: "*" is allowed and filtered.
func nsList(caps ...string) need {
	return need{kind: kindNamespace, caps: caps, wildcardOK: true, filter: filterWildcard}
}

// nsObj checks caps in the namespace of the object the path names.
func nsObj(kind string, caps ...string) need {
	return need{kind: kindNamespace, caps: caps, objectNS: kind}
}

const (
	capRead      = acl.NamespaceCapabilityReadJob
	capList      = acl.NamespaceCapabilityListJobs
	capSubmit    = acl.NamespaceCapabilitySubmitJob
	capParse     = acl.NamespaceCapabilityParseJob
	capDispatch  = acl.NamespaceCapabilityDispatchJob
	capLifecycle = acl.NamespaceCapabilityAllocLifecycle
	capReadFS    = acl.NamespaceCapabilityReadFS
	capReadLogs  = acl.NamespaceCapabilityReadLogs
	capExec      = acl.NamespaceCapabilityAllocExec
	capScale     = acl.NamespaceCapabilityScaleJob
	capReadScale = acl.NamespaceCapabilityReadJobScaling
)

// routeRule maps a method and a path pattern to what it needs. Methods:
// "GET", "WRITE" (PUT or POST), "DELETE", "*" (any), or several joined by
// "|". A path belongs to the most specific pattern matching it (ownPattern:
// "/v1/acl/token/self" over "/v1/acl/token/:id"); the methods of that
// pattern's rules are all it serves: any other is a 405
// (methodNotAllowed), so list every method a handler serves. Pattern
// segments: a literal, ":x" (any one segment) or a final "*" (the rest,
// possibly empty).
type routeRule struct {
	method  string
	pattern string
	need    need
}

// routeRules is Nomad's authorization of every route; among the rules of a
// path's own pattern, the first matching the method wins.
var routeRules = []routeRule{
	// Jobs.
	{"GET", "/v1/jobs", nsList(capList)},
	{"WRITE", "/v1/jobs", nsJob(capSubmit)},
	{"WRITE", "/v1/jobs/parse", ns(capParse)},
	// Search reads jobs, allocations, evaluations and deployments of the
	// namespace searched: ?namespace=, else the body's Namespace (as the
	// handler searches). "*" is allowed: every list read is filtered by
	// the token. Nodes need node:read too (search.go).
	{"WRITE", "/v1/search", nsSearch(capRead)},
	{"WRITE", "/v1/search/fuzzy", nsSearch(capRead)},
	{"GET", "/v1/services", nsList(capRead)},
	{"GET", "/v1/volumes", nsList(acl.NamespaceCapabilityCSIListVolume, acl.NamespaceCapabilityCSIReadVolume,
		acl.NamespaceCapabilityCSIMountVolume, capList)},
	// One volume, in the request's namespace. The stronger host volume
	// capabilities imply the weaker (internal/acl expands them).
	{"GET", "/v1/volume/csi/:id", ns(acl.NamespaceCapabilityCSIReadVolume, acl.NamespaceCapabilityCSIMountVolume, capRead)},
	{"PUT|DELETE", "/v1/volume/csi/:id", ns(acl.NamespaceCapabilityCSIWriteVolume)},
	{"GET", "/v1/volume/host/:id", ns(acl.NamespaceCapabilityHostVolumeRead)},
	{"DELETE", "/v1/volume/host/:id", ns(acl.NamespaceCapabilityHostVolumeDelete)},
	// CSI plugins: plugin:list for the list, plugin:read for one.
	{"GET", "/v1/plugins", need{kind: kindPluginList}},
	{"GET", "/v1/plugin/*", need{kind: kindPluginRead}},
	{"GET", "/v1/service/:name", ns(capRead)},
	{"DELETE", "/v1/service/:name/:id", ns(capSubmit)},
	{"GET", "/v1/job/:id/services", ns(capRead)},
	{"WRITE", "/v1/validate/job", nsJob(capRead)},
	{"GET", "/v1/job/:id", ns(capRead)},
	{"WRITE", "/v1/job/:id", nsJob(capSubmit)},
	{"DELETE", "/v1/job/:id", ns(capSubmit)},
	{"GET", "/v1/job/:id/allocations", ns(capRead)},
	{"GET", "/v1/job/:id/evaluations", ns(capRead)},
	{"GET", "/v1/job/:id/deployments", ns(capRead)},
	{"GET", "/v1/job/:id/deployment", ns(capRead)},
	{"GET", "/v1/job/:id/summary", ns(capRead)},
	{"GET", "/v1/job/:id/versions", ns(capRead)},
	{"GET", "/v1/job/:id/submission", ns(capRead)},
	{"WRITE", "/v1/job/:id/versions/:v/tag", ns(capSubmit)},
	{"DELETE", "/v1/job/:id/versions/:v/tag", ns(capSubmit)},
	{"WRITE", "/v1/job/:id/plan", nsJob(capSubmit)},
	{"WRITE", "/v1/job/:id/evaluate", ns(capSubmit)},
	{"WRITE", "/v1/job/:id/revert", ns(capSubmit)},
	{"WRITE", "/v1/job/:id/stable", ns(capSubmit)},
	{"WRITE", "/v1/job/:id/promote", ns(capSubmit)},
	{"GET", "/v1/job/:id/scale", ns(capReadScale, capRead)},
	{"WRITE", "/v1/job/:id/scale", ns(capScale, capSubmit)},
	{"WRITE", "/v1/job/:id/periodic/force", ns(capDispatch, capSubmit)},
	{"WRITE", "/v1/job/:id/dispatch", ns(capDispatch)},
	// Dispatch with the raw body as payload (jobs_periodic.go).
	{"WRITE", "/v1/job/:id/dispatch/payload", ns(capDispatch)},
	{"WRITE", "/v1/job/:id/restart/resume", ns(capLifecycle)},
	{"GET|WRITE|DELETE", "/v1/job/:id/restart", ns(capLifecycle)},

	// Allocations, evaluations, deployments.
	{"GET", "/v1/allocations", nsList(capRead)},
	{"GET", "/v1/allocation/:id", nsObj("alloc", capRead)},
	{"GET", "/v1/allocation/:id/services", nsObj("alloc", capRead)},
	{"WRITE", "/v1/allocation/:id/stop", nsObj("alloc", capLifecycle)},
	{"GET", "/v1/allocation/:id/checks", nsObj("alloc", capRead)},
	{"GET", "/v1/evaluations", nsList(capRead)},
	{"DELETE", "/v1/evaluations", needManagement},
	{"GET", "/v1/evaluations/count", nsList(capRead)},
	{"GET", "/v1/evaluation/:id", nsObj("eval", capRead)},
	{"GET", "/v1/evaluation/:id/allocations", nsObj("eval", capRead)},
	{"GET", "/v1/deployments", nsList(capRead)},
	{"GET", "/v1/deployment/:id", nsObj("deployment", capRead)},
	{"GET", "/v1/deployment/allocations/:id", nsObj("deployment", capRead)},
	{"WRITE", "/v1/deployment/fail/:id", nsObj("deployment", capSubmit)},
	{"WRITE", "/v1/deployment/pause/:id", nsObj("deployment", capSubmit)},
	{"WRITE", "/v1/deployment/promote/:id", nsObj("deployment", capSubmit)},
	{"WRITE", "/v1/deployment/allocation-health/:id", nsObj("deployment", capSubmit)},
	{"WRITE", "/v1/deployment/unblock/:id", nsObj("deployment", capSubmit)},

	// Node pools: the list is filtered by node_pool read; one pool needs
	// its capability (named in the path, or in the body's Name).
	{"GET", "/v1/node/pools", need{kind: kindAnyToken, filter: filterNodePools}},
	{"WRITE", "/v1/node/pools", need{kind: kindNodePool, caps: []string{"write"}, poolField: "Name"}},
	{"GET", "/v1/node/pool/:name", nodePool("read")},
	{"WRITE", "/v1/node/pool/:name", nodePool("write")},
	{"DELETE", "/v1/node/pool/:name", nodePool("delete")},
	{"GET", "/v1/node/pool/:name/nodes", need{kind: kindNodePool, caps: []string{"read"}, nodeRead: true}},
	{"GET", "/v1/node/pool/:name/jobs", need{kind: kindNodePool, caps: []string{"read"}, filter: filterAlways}},

	// Nodes.
	{"GET", "/v1/nodes", needNodeRead},
	{"GET", "/v1/node/:id", needNodeRead},
	{"GET", "/v1/node/:id/allocations", need{kind: kindNodeRead, caps: []string{capRead}, filter: filterAlways}},
	{"WRITE", "/v1/node/:id/evaluate", needNodeWrite},
	{"WRITE", "/v1/node/:id/purge", needNodeWrite},
	{"WRITE", "/v1/node/:id/eligibility", needNodeWrite},
	{"WRITE", "/v1/node/:id/drain", needNodeWrite},

	// Status, regions, operator.
	{"GET", "/v1/status/leader", needPublic},
	{"GET", "/v1/status/peers", needPublic},
	{"GET", "/v1/regions", needPublic},
	{"GET", "/v1/operator/raft/configuration", needOperRead},
	{"DELETE", "/v1/operator/raft/peer", needOperWrite},
	{"GET", "/v1/operator/scheduler/configuration", needOperRead},
	{"WRITE", "/v1/operator/scheduler/configuration", needOperWrite},

	// Scaling policies.
	{"GET", "/v1/scaling/policies", nsList(acl.NamespaceCapabilityListScalingPolicies)},
	{"GET", "/v1/scaling/policy/:id", ns(acl.NamespaceCapabilityReadScalingPolicy)},

	// Namespaces: anyone with a token lists those they may see; one
	// namespace needs a capability in it; writes are management.
	{"GET", "/v1/namespaces", need{kind: kindAnyToken, filter: filterNamespaces}},
	{"GET", "/v1/namespace/:name", need{kind: kindNamespaceAny}},
	{"WRITE|DELETE", "/v1/namespace/:name", needManagement},
	{"WRITE", "/v1/namespace", needManagement},

	// Agent, metrics, system.
	{"GET", "/v1/agent/self", needAgentRead},
	{"GET", "/v1/agent/members", needNodeRead},
	{"GET", "/v1/agent/health", needPublic},
	{"GET", "/v1/agent/monitor", needAgentRead},
	{"GET", "/v1/agent/schedulers", needAgentRead},
	{"GET|WRITE", "/v1/agent/schedulers/config", needAgentWrite},
	{"GET", "/v1/agent/pprof/:profile", needAgentWrite},
	// Routes other branches add (rules ready for their merge).
	{"WRITE", "/v1/agent/force-leave", needAgentWrite},
	{"WRITE", "/v1/agent/join", needAgentWrite},
	{"GET", "/v1/agent/servers", needAgentRead},
	{"WRITE", "/v1/agent/servers", needAgentWrite},
	{"GET|WRITE", "/v1/agent/keyring/*", needAgentWrite},
	{"GET", "/v1/operator/autopilot/configuration", needOperRead},
	{"WRITE", "/v1/operator/autopilot/configuration", needOperWrite},
	{"GET", "/v1/operator/autopilot/health", needOperRead},
	{"WRITE", "/v1/operator/raft/transfer-leadership", needOperWrite},
	{"GET|WRITE", "/v1/operator/snapshot", needManagement},
	{"GET", "/v1/metrics", needPublic},
	{"WRITE", "/v1/system/gc", needManagement},
	{"WRITE", "/v1/system/reconcile/summaries", needManagement},
	{"GET", "/v1/event/stream", needEventStream},
	{"GET", "/.well-known/jwks.json", needPublic},
	{"GET", "/.well-known/openid-configuration", needPublic},

	// Variables: any valid token reaches the endpoint, which checks the
	// token's variable path rules per path (list answers are filtered).
	{"GET", "/v1/vars", needAnyToken},
	{"GET|WRITE|DELETE", "/v1/var/*", needAnyToken},

	// Keyring: management only, as Nomad's.
	{"GET", "/v1/operator/keyring/keys", needManagement},
	{"WRITE", "/v1/operator/keyring/rotate", needManagement},
	{"DELETE", "/v1/operator/keyring/key/:id", needManagement},

	// Client.
	{"GET", "/v1/client/stats", needNodeRead},
	{"GET", "/v1/client/metadata", needNodeRead},
	{"WRITE", "/v1/client/metadata", needNodeWrite},
	{"GET", "/v1/client/identity", needNodeRead},
	{"WRITE", "/v1/client/identity/renew", needNodeWrite},
	{"GET|WRITE", "/v1/client/gc", needNodeWrite},
	{"GET|WRITE", "/v1/client/allocation/:id/gc", nsObj("alloc", capLifecycle)},
	{"GET", "/v1/client/allocation/:id/stats", nsObj("alloc", capRead)},
	{"WRITE", "/v1/client/allocation/:id/restart", nsObj("alloc", capLifecycle)},
	{"WRITE", "/v1/client/allocation/:id/signal", nsObj("alloc", capLifecycle)},
	{"GET", "/v1/client/allocation/:id/checks", nsObj("alloc", capRead)},
	{"GET", "/v1/client/allocation/:id/exec", nsObj("alloc", capExec)},
	// The node of a replacement fetching its previous allocation's data
	// (ephemeral_disk migrate) presents a migrate token, not an ACL
	// token: the handler checks it against this node's secret.
	{"GET", "/v1/client/allocation/:id/snapshot", needPublic},
	{"GET", "/v1/client/fs/logs/:id", nsObj("alloc", capReadLogs, capReadFS)},
	{"GET", "/v1/client/fs/ls/:id", nsObj("alloc", capReadFS)},
	{"GET", "/v1/client/fs/stat/:id", nsObj("alloc", capReadFS)},
	{"GET", "/v1/client/fs/cat/:id", nsObj("alloc", capReadFS)},
	{"GET", "/v1/client/fs/readat/:id", nsObj("alloc", capReadFS)},
	{"GET", "/v1/client/fs/stream/:id", nsObj("alloc", capReadFS)},

	// ACLs. The ACL RPC endpoint refines these (a token reads its own
	// policies, roles and itself).
	{"WRITE", "/v1/acl/bootstrap", needPublic},
	{"GET", "/v1/acl/policies", needAnyToken},
	{"GET", "/v1/acl/policy/:name", needAnyToken},
	{"WRITE|DELETE", "/v1/acl/policy/:name", needManagement},
	{"GET", "/v1/acl/tokens", needManagement},
	{"WRITE", "/v1/acl/token", needManagement},
	{"GET", "/v1/acl/token/self", needAnyToken},
	{"WRITE", "/v1/acl/token/onetime", needAnyToken},
	{"WRITE", "/v1/acl/token/onetime/exchange", needPublic},
	{"GET", "/v1/acl/token/:id", needAnyToken},
	{"WRITE|DELETE", "/v1/acl/token/:id", needManagement},
	{"GET", "/v1/acl/roles", needAnyToken},
	{"WRITE", "/v1/acl/role", needManagement},
	{"GET", "/v1/acl/role/name/:name", needAnyToken},
	{"GET", "/v1/acl/role/:id", needAnyToken},
	{"WRITE|DELETE", "/v1/acl/role/:id", needManagement},
	{"GET", "/v1/acl/auth-methods", needPublic},
	{"WRITE", "/v1/acl/auth-method", needManagement},
	{"GET|WRITE|DELETE", "/v1/acl/auth-method/:name", needManagement},
	{"GET", "/v1/acl/binding-rules", needManagement},
	{"WRITE", "/v1/acl/binding-rule", needManagement},
	{"GET|WRITE|DELETE", "/v1/acl/binding-rule/:id", needManagement},
	{"WRITE", "/v1/acl/login", needPublic},
	{"WRITE", "/v1/acl/oidc/auth-url", needPublic},
	{"WRITE", "/v1/acl/oidc/complete-auth", needPublic},
	// node_pool write on the body's NodePool (the RPC checks it too).
	{"WRITE", "/v1/acl/identity/client-introduction-token", need{kind: kindNodePool, caps: []string{"write"}, poolField: "NodePool"}},
}

// matchRoute finds the first rule matching method and the escaped path
// among the rules of the path's most specific pattern (ownPattern).
func matchRoute(method, path string) *routeRule {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	own := ownPattern(segs)
	for i := range routeRules {
		rr := &routeRules[i]
		if rr.pattern != own || !methodMatches(rr.method, method) {
			continue
		}
		return rr
	}
	return nil
}

// ownPattern is the most specific pattern matching segs, "" if none: a
// literal segment beats ":x", which beats a final "*", compared from the
// first segment on. So "/v1/acl/token/self" alone owns that path, as
// Nomad's mux gives it its own handler, and "/v1/acl/token/:id"'s methods
// neither authorize nor serve it.
func ownPattern(segs []string) string {
	best := ""
	for i := range routeRules {
		p := routeRules[i].pattern
		if p == best || !patternMatches(p, segs) {
			continue
		}
		if best == "" || moreSpecific(p, best) {
			best = p
		}
	}
	return best
}

// moreSpecific reports whether pattern a ranks above b (see ownPattern).
func moreSpecific(a, b string) bool {
	rank := func(seg string) int {
		switch {
		case seg == "*":
			return 0
		case strings.HasPrefix(seg, ":"):
			return 1
		}
		return 2
	}
	as := strings.Split(strings.Trim(a, "/"), "/")
	bs := strings.Split(strings.Trim(b, "/"), "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if ra, rb := rank(as[i]), rank(bs[i]); ra != rb {
			return ra > rb
		}
	}
	return len(as) > len(bs)
}

func methodMatches(rule, m string) bool {
	for _, one := range strings.Split(rule, "|") {
		switch one {
		case "*":
			return true
		case "WRITE":
			if m == http.MethodPut || m == http.MethodPost {
				return true
			}
		default:
			if one == m {
				return true
			}
		}
	}
	return false
}

// allowOrder is the order of the methods in an Allow header.
var allowOrder = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete}

// methodNotAllowed reports whether method is one no rule serves on the
// escaped path while others are served there (a known route, a wrong
// method: Nomad's 405), with the Allow header listing those. A path no rule
// matches, or one a rule serves for any method, is never reported: the
// authorizer and the handler answer it.
func methodNotAllowed(method, path string) (allow string, bad bool) {
	if strings.HasSuffix(path, "/") || strings.Contains(path, "//") {
		// Rules see "/v1/acl/token/" as "/v1/acl/token", but the mux
		// routes them to different handlers: leave such paths to them.
		return "", false
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	own := ownPattern(segs)
	var served []string
	for i := range routeRules {
		rr := &routeRules[i]
		if rr.pattern != own {
			continue
		}
		if methodMatches(rr.method, method) || rr.method == "*" {
			return "", false
		}
		for _, m := range allowOrder {
			if methodMatches(rr.method, m) && !slices.Contains(served, m) {
				served = append(served, m)
			}
		}
	}
	if len(served) == 0 {
		return "", false
	}
	sorted := make([]string, 0, len(served))
	for _, m := range allowOrder {
		if slices.Contains(served, m) {
			sorted = append(sorted, m)
		}
	}
	return strings.Join(sorted, ", "), true
}

func patternMatches(pattern string, segs []string) bool {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	for i, p := range ps {
		if p == "*" && i == len(ps)-1 {
			return len(segs) >= i
		}
		if i >= len(segs) {
			return false
		}
		if strings.HasPrefix(p, ":") {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if p != segs[i] {
			return false
		}
	}
	return len(segs) == len(ps)
}
