package server

import (
	"crypto/subtle"
	"reflect"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/acl"
	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/tlsutil"
)

// rpcClass is how a network call on the RPC port is authorized. Every
// registered RPC method has one (rpcAuthTable); a method missing from the
// table is refused, so a new RPC cannot land unchecked
// (TestRPCAuthTableCoversEveryMethod).
type rpcClass int

const (
	// rpcPublic needs no token (status, login, public keys).
	rpcPublic rpcClass = iota + 1
	// rpcRead is checked here, before the endpoint runs, with the
	// capability the HTTP route table asks for; lists are filtered to
	// what the token may read.
	rpcRead
	// rpcWrite is checked by the endpoint itself (authorize* in the
	// endpoint's body), as every write was before this table existed.
	rpcWrite
	// rpcNode is a client agent's call: the node's secret, or the
	// capability of the entry.
	rpcNode
	// rpcServer is only for another server: a TLS peer certificate naming
	// server.<region>.nomad, or the cluster's server secret as AuthToken.
	rpcServer
)

// rpcAuth is one method's entry. check, when set, decides a token's ACL
// for rpcRead and rpcNode (the namespace is the request's, or the named
// object's); filter, when set, keeps the elements of a list answer the
// ACL may read.
type rpcAuth struct {
	class  rpcClass
	check  func(s *Server, args any, a *acl.ACL) bool
	filter func(a *acl.ACL, ns string) bool
}

// nsCap checks capability in the namespace the request names ("*" is
// allowed and the answer filtered by the same capability).
func nsCap(caps ...string) rpcAuth {
	allow := func(a *acl.ACL, ns string) bool { return a.AllowNamespaceAnyOperation(ns, caps...) }
	return rpcAuth{class: rpcRead, filter: allow, check: func(s *Server, args any, a *acl.ACL) bool {
		ns := namespaceOf(stringField(args, "Namespace"))
		if ns == "*" {
			return true
		}
		return allow(a, ns)
	}}
}

// objCap checks capability in the namespace of the object the request's
// idField names (an unknown object is checked in the request's
// namespace; the endpoint then answers not found).
func objCap(idField string, lookup func(s *Server, id string) string, caps ...string) rpcAuth {
	return rpcAuth{class: rpcRead, check: func(s *Server, args any, a *acl.ACL) bool {
		ns := lookup(s, stringField(args, idField))
		if ns == "" {
			ns = namespaceOf(stringField(args, "Namespace"))
		}
		return a.AllowNamespaceAnyOperation(ns, caps...)
	}}
}

// nodeOr also lets a registered node's secret make the call.
func nodeOr(e rpcAuth) rpcAuth {
	e.class = rpcNode
	return e
}

func allocNS(s *Server, id string) string {
	if a, err := s.State().AllocByID(nil, id); err == nil && a != nil {
		return a.Namespace
	}
	return ""
}

func evalNS(s *Server, id string) string {
	if e, err := s.State().EvalByID(nil, id); err == nil && e != nil {
		return e.Namespace
	}
	return ""
}

func deploymentNS(s *Server, id string) string {
	if d, err := s.State().DeploymentByID(nil, id); err == nil && d != nil {
		return d.Namespace
	}
	return ""
}

func scalingNS(s *Server, id string) string {
	if p, err := s.State().ScalingPolicyByID(nil, id); err == nil && p != nil {
		return p.Namespace
	}
	return ""
}

func capFn(f func(*acl.ACL) bool) func(*Server, any, *acl.ACL) bool {
	return func(_ *Server, _ any, a *acl.ACL) bool { return f(a) }
}

func checked(f func(*acl.ACL) bool) rpcAuth { return rpcAuth{class: rpcRead, check: capFn(f)} }

func readJobNS(a *acl.ACL, ns string) bool {
	return a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob)
}

var (
	authPublic = rpcAuth{class: rpcPublic}
	authWrite  = rpcAuth{class: rpcWrite}
	authServer = rpcAuth{class: rpcServer}
	readJob    = acl.NamespaceCapabilityReadJob
)

// rpcAuthTable classifies every registered RPC method.
var rpcAuthTable = map[string]rpcAuth{
	// Public.
	"Status.Leader": authPublic, "Status.Peers": authPublic, "Status.Ping": authPublic,
	// Status.Members answers a client agent's /v1/agent/members, which
	// the agent's HTTP layer authorized (agent:read) before it asked.
	"Status.Members": authPublic,
	"Region.List":    authPublic, "Keyring.ListPublic": authPublic,
	"ACL.Login": authPublic, "ACL.OIDCAuthURL": authPublic, "ACL.OIDCCompleteAuth": authPublic,

	// Server-only: the scheduler workers, the plan applier and autopilot.
	"Eval.Dequeue": authServer, "Eval.Ack": authServer, "Eval.Nack": authServer,
	// Root key material moves only between servers (keyring_fetch.go).
	"Keyring.Get": authServer, "Keyring.Deliver": authServer,
	"Eval.Update": authServer, "Eval.Create": authServer, "Eval.Reblock": authServer,
	"Plan.Submit": authServer, "Status.RaftStats": authServer,

	// Reads checked at the RPC boundary.
	"Job.GetJob":           nsCap(readJob),
	"Job.Allocations":      nsCap(readJob),
	"Job.Evaluations":      nsCap(readJob),
	"Job.Deployments":      nsCap(readJob),
	"Job.LatestDeployment": nsCap(readJob),
	"Job.Summary":          nsCap(readJob),
	"Job.GetJobVersions":   nsCap(readJob),
	"Job.GetJobSubmission": nsCap(readJob),
	"Job.GetRestart":       nsCap(readJob),
	"Job.Validate":         nsCap(readJob),
	"Job.ScaleStatus":      nsCap(readJob, acl.NamespaceCapabilityReadJobScaling),
	"Job.List":             nsCap(acl.NamespaceCapabilityListJobs),
	"Alloc.List":           nsCap(readJob),
	"Eval.List":            nsCap(readJob),
	"Deployment.List":      nsCap(readJob),
	"Scaling.ListPolicies": nsCap(acl.NamespaceCapabilityListScalingPolicies, acl.NamespaceCapabilityListJobs),
	"Scaling.GetPolicy":    objCap("ID", scalingNS, acl.NamespaceCapabilityReadScalingPolicy, readJob),
	// A client agent looks these three up with its node secret to learn
	// the namespace a request on its HTTP API is judged in (the caller's
	// token may hold only alloc-exec there, not read-job).
	"Alloc.GetAlloc":           nodeOr(objCap("AllocID", allocNS, readJob)),
	"Eval.GetEval":             nodeOr(objCap("EvalID", evalNS, readJob)),
	"Eval.Allocations":         objCap("EvalID", evalNS, readJob),
	"Deployment.GetDeployment": nodeOr(objCap("DeploymentID", deploymentNS, readJob)),
	"Deployment.Allocations":   objCap("DeploymentID", deploymentNS, readJob),
	// A count cannot be filtered: "*" needs management.
	"Eval.Count": {class: rpcRead, check: func(s *Server, args any, a *acl.ACL) bool {
		ns := namespaceOf(stringField(args, "Namespace"))
		return a.IsManagement() || (ns != "*" && readJobNS(a, ns))
	}},
	"Node.List":      checked((*acl.ACL).AllowNodeRead),
	"Node.GetAllocs": {class: rpcRead, check: capFn((*acl.ACL).AllowNodeRead), filter: readJobNS},
	"Namespace.GetNamespace": {class: rpcRead, check: func(s *Server, args any, a *acl.ACL) bool {
		return a.AllowNamespace(stringField(args, "Name"))
	}},
	"Namespace.ListNamespaces": {class: rpcRead, check: capFn(func(*acl.ACL) bool { return true }), filter: func(a *acl.ACL, name string) bool {
		return a.AllowNamespace(name)
	}},
	"NodePool.GetNodePool": {class: rpcRead, check: func(s *Server, args any, a *acl.ACL) bool {
		return a.AllowNodePoolOperation(stringField(args, "Name"), "read")
	}},
	"NodePool.List": {class: rpcRead, check: capFn(func(*acl.ACL) bool { return true }), filter: func(a *acl.ACL, name string) bool {
		return a.AllowNodePoolOperation(name, "read")
	}},
	"NodePool.ListJobs": {class: rpcRead, check: func(s *Server, args any, a *acl.ACL) bool {
		return a.AllowNodePoolOperation(stringField(args, "Name"), "read")
	}, filter: func(a *acl.ACL, ns string) bool {
		return a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityListJobs)
	}},
	"NodePool.ListNodes": {class: rpcRead, check: func(s *Server, args any, a *acl.ACL) bool {
		return a.AllowNodePoolOperation(stringField(args, "Name"), "read") && a.AllowNodeRead()
	}},
	"Keyring.List":                       checked((*acl.ACL).IsManagement),
	"Operator.AutopilotGetConfiguration": checked((*acl.ACL).AllowOperatorRead),
	"Operator.AutopilotSetConfiguration": checked((*acl.ACL).AllowOperatorWrite),
	"Operator.ServerHealth":              checked((*acl.ACL).AllowOperatorRead),
	"Operator.TransferLeadershipToPeer":  checked((*acl.ACL).AllowOperatorWrite),
	"Operator.SnapshotSave":              checked((*acl.ACL).IsManagement),
	"Operator.SnapshotRestore":           checked((*acl.ACL).IsManagement),

	// A client agent's calls: its node secret, else the capability.
	"Node.GetNode":         {class: rpcNode, check: capFn((*acl.ACL).AllowNodeRead)},
	"Node.GetClientAllocs": {class: rpcNode, check: capFn((*acl.ACL).AllowNodeRead)},
	"Alloc.GetAllocs":      {class: rpcNode, check: capFn((*acl.ACL).IsManagement)},
	"Alloc.SignIdentities": {class: rpcNode, check: capFn((*acl.ACL).IsManagement)},

	// Nomad-native services: clients register and remove their
	// allocations' services with their node secret; operators read them
	// with read-job and delete one with submit-job.
	"ServiceRegistration.Upsert":        {class: rpcNode, check: capFn((*acl.ACL).IsManagement)},
	"ServiceRegistration.DeleteByAlloc": {class: rpcNode, check: capFn((*acl.ACL).IsManagement)},
	"ServiceRegistration.DeleteByID": {class: rpcNode, check: func(_ *Server, args any, a *acl.ACL) bool {
		return a.AllowNamespaceAnyOperation(namespaceOf(stringField(args, "Namespace")), acl.NamespaceCapabilitySubmitJob)
	}},
	// The list across namespaces ("*") is not filtered element by element
	// here, so it needs management over the network.
	"ServiceRegistration.List": {class: rpcRead, check: func(_ *Server, args any, a *acl.ACL) bool {
		ns := namespaceOf(stringField(args, "Namespace"))
		return ns != "*" && a.AllowNamespaceAnyOperation(ns, readJob)
	}},
	"ServiceRegistration.GetService": nsCapStrict(readJob),
	"ServiceRegistration.ByJob":      nsCapStrict(readJob),
	"ServiceRegistration.ByAlloc":    objCap("AllocID", allocNS, readJob),
}

// nsCapStrict checks capability in the request's namespace; "*" is refused
// (the answer is not filtered).
func nsCapStrict(caps ...string) rpcAuth {
	return rpcAuth{class: rpcRead, check: func(_ *Server, args any, a *acl.ACL) bool {
		ns := namespaceOf(stringField(args, "Namespace"))
		return ns != "*" && a.AllowNamespaceAnyOperation(ns, caps...)
	}}
}

// Every write checks its token in the endpoint's body.
func init() {
	for _, m := range []string{
		"ACL.Bootstrap", "ACL.CreateClientIntroductionToken", "ACL.DeleteAuthMethods", "ACL.DeleteBindingRules",
		"ACL.DeletePolicies", "ACL.DeleteRoles", "ACL.DeleteTokens", "ACL.ExchangeOneTimeToken",
		"ACL.GetAuthMethod", "ACL.GetBindingRule", "ACL.GetPolicy", "ACL.GetRole", "ACL.GetRoleByName",
		"ACL.GetToken", "ACL.ListAuthMethods", "ACL.ListBindingRules", "ACL.ListPolicies", "ACL.ListRoles",
		"ACL.ListTokens", "ACL.ReplicateAuthMethods", "ACL.ReplicateTokens", "ACL.ResolveToken", "ACL.UpsertAuthMethods", "ACL.UpsertBindingRules",
		"ACL.UpsertOneTimeToken", "ACL.UpsertPolicies", "ACL.UpsertRoles", "ACL.UpsertTokens",
		"Alloc.Stop",
		"Deployment.Cancel", "Deployment.Fail", "Deployment.Pause", "Deployment.Promote", "Deployment.Run",
		"Deployment.SetAllocHealth", "Deployment.Unblock",
		"Eval.Delete", "Event.Poll",
		"Job.Deregister", "Job.Dispatch", "Job.Evaluate", "Job.Plan", "Job.Register", "Job.Restart",
		"Job.RestartControl", "Job.Revert", "Job.Scale", "Job.Stable", "Job.TagVersion",
		"Keyring.Delete", "Keyring.Rotate",
		"Namespace.DeleteNamespaces", "Namespace.UpsertNamespaces",
		"Node.Deregister", "Node.Evaluate", "Node.Register", "Node.UpdateAlloc", "Node.UpdateDrain",
		"Node.UpdateEligibility", "Node.UpdateStatus",
		"NodePool.DeleteNodePools", "NodePool.UpsertNodePools",
		"Operator.RaftGetConfiguration", "Operator.RaftRemovePeerByAddress", "Operator.RaftRemovePeerByID",
		"Operator.SchedulerGetConfiguration", "Operator.SchedulerSetConfiguration",
		"Periodic.Force", "System.GarbageCollect", "System.ReconcileJobSummaries",
		"Variables.Apply", "Variables.List", "Variables.Read", "Variables.RenewLock",
	} {
		if _, dup := rpcAuthTable[m]; dup {
			panic("rpc auth table: " + m + " classified twice")
		}
		rpcAuthTable[m] = authWrite
	}
}

var errServerOnly = structs.NewErrCoded(403, "Permission denied: only servers may call this RPC")

// authorizeRPC is the RPC listener's Authorizer: it runs for every call
// that arrives over the network (in-process calls, including the HTTP
// layer's after it authorized, do not pass through it).
func (s *Server) authorizeRPC(method string, args any, peer droverrpc.Peer) (func(any), error) {
	e, ok := rpcAuthTable[method]
	if !ok {
		return nil, structs.NewErrCoded(403, "Permission denied: RPC %q is not classified", method)
	}
	if !s.config.ACLEnabled || e.class == rpcPublic || e.class == rpcWrite {
		return nil, nil
	}
	token := stringField(args, "AuthToken")
	if e.class == rpcServer {
		if s.isServerPeer(peer, token) {
			return nil, nil
		}
		return nil, errServerOnly
	}
	if e.class == rpcNode && s.isNodeSecret(token, stringField(args, "SecretID")) {
		return nil, nil
	}
	_, a, err := s.resolveToken(token)
	if err != nil {
		return nil, err
	}
	if a.IsManagement() {
		return nil, nil
	}
	if e.check != nil && !e.check(s, args, a) {
		return nil, errPermission
	}
	if e.filter == nil {
		return nil, nil
	}
	return func(reply any) { filterReply(reply, func(ns string) bool { return e.filter(a, ns) }) }, nil
}

// isServerPeer reports whether a call comes from another server of this
// region: its TLS certificate names server.<region>.nomad, or it carries
// the cluster's server secret.
func (s *Server) isServerPeer(peer droverrpc.Peer, token string) bool {
	if peer.TLS != nil && len(peer.TLS.PeerCertificates) > 0 &&
		tlsutil.CheckPeer(peer.TLS.PeerCertificates[0], s.config.Region, false) == nil {
		return true
	}
	secret := s.serverSecret()
	return secret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(token)) == 1
}

// isNodeSecret reports whether one of the secrets is a registered node's.
func (s *Server) isNodeSecret(secrets ...string) bool {
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		if n, err := s.State().NodeBySecretID(nil, sec); err == nil && n != nil {
			return true
		}
	}
	return false
}

// stringField reads a string field (embedded ones included) of a request.
func stringField(args any, name string) string {
	v := reflect.Indirect(reflect.ValueOf(args))
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.String {
		return ""
	}
	return f.String()
}

// setAuthToken sets a request's AuthToken (embedded QueryOptions or
// WriteRequest) when it has one.
func setAuthToken(args any, token string) {
	v := reflect.ValueOf(args)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	v = v.Elem()
	if v.Kind() != reflect.Struct {
		return
	}
	if f := v.FieldByName("AuthToken"); f.IsValid() && f.Kind() == reflect.String && f.CanSet() {
		f.SetString(token)
	}
}

// filterReply keeps, in every slice field of reply whose elements carry a
// Namespace (or, for namespace and node pool lists, a Name), the elements
// allow admits.
func filterReply(reply any, allow func(string) bool) {
	v := reflect.Indirect(reflect.ValueOf(reply))
	if v.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || !f.CanSet() {
			continue
		}
		et := f.Type().Elem()
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() != reflect.Struct {
			continue
		}
		key := elemKey(et)
		if key == nil {
			continue
		}
		kept := reflect.MakeSlice(f.Type(), 0, f.Len())
		for j := 0; j < f.Len(); j++ {
			el := f.Index(j)
			ev := reflect.Indirect(el)
			if !ev.IsValid() {
				continue
			}
			if allow(key(ev)) {
				kept = reflect.Append(kept, el)
			}
		}
		f.Set(kept)
	}
}

// serverSecret is the cluster's server secret ("" until the first leader
// with ACLs on wrote the cluster metadata).
func (s *Server) serverSecret() string {
	if m, err := s.State().ClusterMetadata(nil); err == nil && m != nil {
		return m.ServerSecret
	}
	return ""
}

// ensureClusterMetadata writes, once per cluster, the cluster's identity
// and server secret through Raft (the leader runs it when it takes over
// with ACLs on). A write that fails is retried at the next leadership.
func (s *Server) ensureClusterMetadata() {
	if !s.config.ACLEnabled || s.serverSecret() != "" {
		return
	}
	if m, err := s.State().ClusterMetadata(nil); err != nil || m != nil {
		// Written before this field existed: the ID is fixed, and
		// SetClusterMetadata keeps the first write.
		return
	}
	meta := &structs.ClusterMetadata{ClusterID: uuid.NewString(), CreateTime: time.Now().UnixNano(), ServerSecret: uuid.NewString()}
	if _, _, err := s.raftApply(structs.ClusterMetadataRequestType, meta); err != nil {
		s.logger.Warn("writing the cluster metadata failed", "error", err)
	}
}

// elemKey is how filterReply reads a list element's namespace: its
// Namespace field, a scaling policy stub's Target["Namespace"], or (the
// namespace and node pool lists) its Name; nil when it has none.
func elemKey(et reflect.Type) func(reflect.Value) string {
	if sf, ok := et.FieldByName("Namespace"); ok && sf.Type.Kind() == reflect.String {
		return func(v reflect.Value) string { return v.FieldByName("Namespace").String() }
	}
	if sf, ok := et.FieldByName("Target"); ok && sf.Type == reflect.TypeOf(map[string]string(nil)) {
		return func(v reflect.Value) string {
			return namespaceOf(v.FieldByName("Target").Interface().(map[string]string)["Namespace"])
		}
	}
	if sf, ok := et.FieldByName("Name"); ok && sf.Type.Kind() == reflect.String {
		return func(v reflect.Value) string { return v.FieldByName("Name").String() }
	}
	return nil
}
