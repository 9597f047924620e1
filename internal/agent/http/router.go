package httpapi

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// RPCer is the agent's route to a server (in-process or forwarded).
type RPCer interface {
	RPC(method string, args any, reply any) error
}

// ClientFS is the local client's filesystem API. It may be nil when the agent
// runs no client.
type ClientFS interface {
	FSList(allocID, path string) ([]*api.AllocFileInfo, error)
	FSStat(allocID, path string) (*api.AllocFileInfo, error)
	// FSReadAt reads from offset; limit <= 0 reads to EOF.
	FSReadAt(allocID, path string, offset, limit int64) (io.ReadCloser, error)
	// FSStream sends frames on out until done or ctx is cancelled. It closes
	// nothing.
	FSStream(ctx context.Context, allocID, path, origin string, offset int64, follow bool, out chan<- *api.StreamFrame) error
	FSLogs(ctx context.Context, allocID, task, logType, origin string, offset int64, follow bool, out chan<- *api.StreamFrame) error
}

// ClientStats is the local client's view of its host. It may be nil when
// the agent runs no client.
type ClientStats interface {
	NodeID() string
	HostStats() (*api.HostStats, error)
}

// ClientNodeMeta is the local client's dynamic node metadata. It may be nil
// when the agent runs no client.
type ClientNodeMeta interface {
	NodeID() string
	NodeMeta() *api.NodeMetaResponse
	// ApplyNodeMeta sets (non-nil) and unsets (nil) dynamic meta keys; bad
	// keys are a coded 400.
	ApplyNodeMeta(meta map[string]*string) (*api.NodeMetaResponse, error)
}

// ClientNodeIdentity is the local client's node identity. It may be nil
// when the agent runs no client.
type ClientNodeIdentity interface {
	NodeID() string
	// NodeIdentityClaims are the current identity's claims (a coded 404
	// before the servers signed one).
	NodeIdentityClaims() (map[string]any, error)
	// RenewNodeIdentity asks for a new identity at the next heartbeat.
	RenewNodeIdentity()
}

// AgentInfo is the agent data the wiring provides.
type AgentInfo interface {
	Self() map[string]any // "config", "member", "stats" as Nomad's /v1/agent/self
	Members() (*structs.ServerMembersResponse, error)
	Region() string
	Datacenter() string
	NodeName() string
	IsServer() bool
	IsClient() bool
	ServerHealth() (ok bool, msg string)
	ClientHealth() (ok bool, msg string)
}

// JobParser turns HCL jobspec source into an api.Job.
type JobParser func(hcl string, vars string, canonicalize bool) (*api.Job, error)

// Authorizer is the single authentication/authorization point: it is called
// for every request that matches a route, before its handler runs. A non-nil
// error is written as the response (coded errors keep their status; an error
// ending in "Permission denied" is a 403).
type Authorizer interface {
	Authorize(r *http.Request, token string) error
}

// requestAuthorizer is an Authorizer that also hands the handler a request
// carrying what it resolved (the ACL lists are filtered by).
type requestAuthorizer interface {
	AuthorizeRequest(r *http.Request, token string) (*http.Request, error)
}

// Config wires the handler to the rest of the agent.
type Config struct {
	RPC        RPCer
	FS         ClientFS           // nil: the agent runs no client
	Stats      ClientStats        // nil: the agent runs no client
	NodeMeta   ClientNodeMeta     // nil: the agent runs no client
	Identity   ClientNodeIdentity // nil: the agent runs no client
	Exec       ClientExec         // nil: the agent runs no client
	AllocStats ClientAllocStats   // nil: the agent runs no client
	GC         ClientGC           // nil: the agent runs no client
	Allocs     LocalAllocs        // nil: the agent runs no client
	AllocOps   ClientAllocOps     // nil: the agent runs no client

	AllocChecks ClientAllocChecks // nil: the agent runs no client
	// AllocSnapshot serves previous allocations' data to the nodes of
	// their replacements; nil: the agent runs no client.
	AllocSnapshot ClientAllocSnapshot
	// Reach opens pipes to other nodes' agents; nil: requests about
	// another node are refused.
	Reach      NodeDialer
	Monitor    LogMonitor       // nil: /v1/agent/monitor answers 501
	Agent      AgentInfo        // nil: agent endpoints answer 500
	Membership Membership       // nil: join, force-leave and servers answer 501
	Schedulers SchedulerWorkers // nil: the agent runs no server
	Events     EventStreamer    // nil: /v1/event/stream answers 501
	// EventHeartbeat is how often an idle event stream sends {}; 0 means
	// 10 s (tests shorten it).
	EventHeartbeat time.Duration
	// EventRecheck is how often an open event stream's token is checked
	// again; 0 means 1 s (tests shorten it).
	EventRecheck time.Duration
	ParseJob     JobParser          // nil: /v1/jobs/parse answers 501
	Auth         Authorizer         // nil: allow everything
	Logger       hclog.Logger       // nil: discard
	MetricsSink  *metrics.InmemSink // nil: a private empty sink
	// MetricsSince is when MetricsSink was created (see metricsSummary).
	MetricsSince time.Time
	PromHandler  http.Handler // nil: ?format=prometheus answers 415
	Region       string       // the agent's region; "" means "global"
	// EnableDebug serves /v1/agent/pprof/ without ACLs (enable_debug).
	EnableDebug bool
	// MaxBodyBytes bounds request bodies (413 past it); 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// execHeartbeat replaces execHeartbeat (tests).
	execHeartbeat time.Duration
}

// allowAll is the default Authorizer until ACLs exist.
type allowAll struct{}

func (allowAll) Authorize(*http.Request, string) error { return nil }

type server struct {
	cfg Config
	log hclog.Logger

	// streams and streamsOpen count the event streams being served
	// (DrainEventStreams).
	streams     sync.WaitGroup
	streamsOpen atomic.Int32
}

// Handler is the HTTP API handler.
type Handler struct {
	http.Handler
	s *server
}

// DrainEventStreams waits up to d for the event streams being served to
// end (the agent closes the event broker first, so each ends with a last
// line instead of a cut connection). It reports how many were being served
// when it was called and whether all of them ended. A stream's handler
// having returned does not mean its response is complete: net/http writes
// the end of the chunked body after that, so the caller lets connections
// go idle (http.Server.Shutdown) before it closes them.
func (h *Handler) DrainEventStreams(d time.Duration) (open int, ended bool) {
	open = int(h.s.streamsOpen.Load())
	done := make(chan struct{})
	go func() { h.s.streams.Wait(); close(done) }()
	select {
	case <-done:
		return open, true
	case <-time.After(d):
		return open, false
	}
}

// route is one registered path. Patterns ending in "/" are prefixes whose
// handlers dispatch on the rest of the path; others match exactly. Handlers
// check the method themselves (405 "Invalid method").
type route struct {
	pattern string
	handler apiHandler
}

func (s *server) routes() []route {
	return []route{
		{"/v1/jobs", s.jobsRequest},
		{"/v1/jobs/parse", s.jobsParseRequest},
		{"/v1/validate/job", s.validateJobRequest},
		{"/v1/job/", s.jobSpecificRequest},

		{"/v1/allocations", s.allocsRequest},
		{"/v1/allocation/", s.allocSpecificRequest},

		{"/v1/evaluations", s.evalsRequest},
		{"/v1/evaluations/count", s.evalsCountRequest},
		{"/v1/evaluation/", s.evalSpecificRequest},

		{"/v1/nodes", s.nodesRequest},
		{"/v1/node/", s.nodeSpecificRequest},
		{"/v1/node/pools", s.nodePoolsRequest},
		{"/v1/node/pool/", s.nodePoolSpecificRequest},

		{"/v1/deployments", s.deploymentsRequest},
		{"/v1/deployment/", s.deploymentSpecificRequest},

		{"/v1/search", s.searchRequest},
		{"/v1/search/fuzzy", s.searchFuzzyRequest},

		{"/v1/status/leader", s.statusLeaderRequest},
		{"/v1/status/peers", s.statusPeersRequest},
		{"/v1/regions", s.regionsRequest},
		{"/v1/operator/raft/configuration", s.operatorRaftConfigurationRequest},
		{"/v1/operator/raft/peer", s.operatorRaftPeerRequest},
		{"/v1/operator/raft/transfer-leadership", s.operatorRaftTransferLeadershipRequest},
		{"/v1/operator/snapshot", s.operatorSnapshotRequest},
		{"/v1/scaling/policies", s.scalingPoliciesRequest},
		{"/v1/scaling/policy/", s.scalingPolicyRequest},
		{"/v1/services", s.servicesRequest},
		{"/v1/volumes", s.volumesRequest},
		{"/v1/volume/", s.volumeSpecificRequest},
		{"/v1/plugins", s.pluginsRequest},
		{"/v1/plugin/", s.pluginSpecificRequest},
		{"/v1/service/", s.serviceRequest},
		{"/v1/operator/scheduler/configuration", s.operatorSchedulerConfigRequest},
		{"/v1/operator/autopilot/configuration", s.operatorAutopilotConfigRequest},
		{"/v1/operator/autopilot/health", s.operatorAutopilotHealthRequest},
		{"/v1/namespaces", s.namespacesRequest},
		{"/v1/namespace", s.namespaceCreateRequest},
		{"/v1/namespace/", s.namespaceSpecificRequest},

		{"/v1/agent/self", s.agentSelfRequest},
		{"/v1/agent/members", s.agentMembersRequest},
		{"/v1/agent/join", s.agentJoinRequest},
		{"/v1/agent/force-leave", s.agentForceLeaveRequest},
		{"/v1/agent/servers", s.agentServersRequest},
		{"/v1/agent/keyring/", s.agentKeyringRequest},
		{"/v1/agent/health", s.agentHealthRequest},
		{"/v1/agent/monitor", s.onQueryNode(s.agentMonitorRequest)},
		{"/v1/agent/schedulers", s.agentSchedulersRequest},
		{"/v1/agent/schedulers/config", s.agentSchedulersConfigRequest},
		{"/v1/agent/pprof/", s.agentPprofRequest},
		{"/v1/metrics", s.metricsRequest},
		{"/v1/system/gc", s.systemGCRequest},
		{"/v1/system/reconcile/summaries", s.systemReconcileSummariesRequest},
		{"/v1/event/stream", s.eventStreamRequest},
		{"/.well-known/jwks.json", s.jwksRequest},
		{"/.well-known/openid-configuration", s.oidcDiscoveryRequest},
		{"/v1/vars", s.variablesListRequest},
		{"/v1/var/", s.variableRequest},
		{"/v1/operator/keyring/keys", s.keyringKeysRequest},
		{"/v1/operator/keyring/rotate", s.keyringRotateRequest},
		{"/v1/operator/keyring/key/", s.keyringKeyRequest},

		{"/v1/acl/bootstrap", s.aclBootstrapRequest},
		{"/v1/acl/policies", s.aclPoliciesRequest},
		{"/v1/acl/policy/", s.aclPolicyRequest},
		{"/v1/acl/tokens", s.aclTokensRequest},
		{"/v1/acl/token", s.aclTokenCreateRequest},
		{"/v1/acl/token/", s.aclTokenRequest},
		{"/v1/acl/roles", s.aclRolesRequest},
		{"/v1/acl/role", s.aclRoleCreateRequest},
		{"/v1/acl/role/", s.aclRoleRequest},
		{"/v1/acl/auth-methods", s.aclAuthMethodsRequest},
		{"/v1/acl/auth-method", s.aclAuthMethodCreateRequest},
		{"/v1/acl/auth-method/", s.aclAuthMethodRequest},
		{"/v1/acl/binding-rules", s.aclBindingRulesRequest},
		{"/v1/acl/binding-rule", s.aclBindingRuleCreateRequest},
		{"/v1/acl/binding-rule/", s.aclBindingRuleRequest},
		{"/v1/acl/login", s.aclLoginRequest},
		{"/v1/acl/oidc/auth-url", s.aclOIDCAuthURLRequest},
		{"/v1/acl/oidc/complete-auth", s.aclOIDCCompleteAuthRequest},
		{"/v1/acl/identity/client-introduction-token", s.aclClientIntroductionRequest},

		// Client routes are served on the node they concern, relayed
		// there from any agent (client_reach.go).
		{"/v1/client/stats", s.onQueryNode(s.clientStatsRequest)},
		{"/v1/client/metadata", s.onQueryNode(s.clientMetadataRequest)},
		{"/v1/client/identity", s.onQueryNode(s.clientIdentityRequest)},
		{"/v1/client/identity/renew", s.onQueryNode(s.clientIdentityRenewRequest)},
		{"/v1/client/gc", s.onQueryNode(s.clientGCRequest)},
		{"/v1/client/allocation/", s.onAllocNode("/v1/client/allocation/", s.clientAllocRequest)},
		{"/v1/client/fs/ls/", s.onAllocNode("/v1/client/fs/ls/", s.fsListRequest)},
		{"/v1/client/fs/stat/", s.onAllocNode("/v1/client/fs/stat/", s.fsStatRequest)},
		{"/v1/client/fs/cat/", s.onAllocNode("/v1/client/fs/cat/", s.fsCatRequest)},
		{"/v1/client/fs/readat/", s.onAllocNode("/v1/client/fs/readat/", s.fsReadAtRequest)},
		{"/v1/client/fs/stream/", s.onAllocNode("/v1/client/fs/stream/", s.fsStreamRequest)},
		{"/v1/client/fs/logs/", s.onAllocNode("/v1/client/fs/logs/", s.fsLogsRequest)},
	}
}

// NewHandler returns the HTTP API v1 handler. Unknown paths answer 404.
func NewHandler(cfg Config) *Handler {
	if cfg.Auth == nil {
		cfg.Auth = allowAll{}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Region == "" {
		cfg.Region = structs.DefaultRegion
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	s := &server{cfg: cfg, log: cfg.Logger.Named("http")}
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.pattern, s.wrap(rt.handler))
	}
	return &Handler{Handler: mux, s: s}
}
