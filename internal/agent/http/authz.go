package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// ACLResolver turns a token secret ("" is anonymous) into the compiled ACL
// it grants. Unknown and expired tokens are errors (403s).
type ACLResolver interface {
	ResolveACL(secret string) (*acl.ACL, error)
}

// ACLAuthorizer enforces ACLs on every route by the table in
// authz_routes.go. Requests no rule matches need a management token.
type ACLAuthorizer struct {
	Resolver ACLResolver
	// RPC looks up the namespace of allocations, evaluations and
	// deployments named in paths.
	RPC RPCer
	// LookupToken, when set, is the token those lookups carry: on a
	// client-only agent they cross the RPC port, where the caller's token
	// may be refused the object (an alloc-exec-only token cannot read an
	// allocation) while the request must still be judged in the object's
	// own namespace, so the agent asks with its node's secret. Unset on a
	// server agent, whose lookups are in-process and unchecked.
	LookupToken func() string
}

var errPermissionDenied = structs.NewErrCoded(http.StatusForbidden, "Permission denied")

type aclCtxKey struct{}

// requestACL is the ACL the authorizer resolved for r (nil: ACLs off).
func requestACL(r *http.Request) *acl.ACL {
	a, _ := r.Context().Value(aclCtxKey{}).(*acl.ACL)
	return a
}

// Authorize implements Authorizer.
func (z *ACLAuthorizer) Authorize(r *http.Request, token string) error {
	_, err := z.AuthorizeRequest(r, token)
	return err
}

// AuthorizeRequest checks r and returns it with the resolved ACL in its
// context, for the handlers that filter lists by it.
func (z *ACLAuthorizer) AuthorizeRequest(r *http.Request, token string) (*http.Request, error) {
	rule := matchRoute(r.Method, r.URL.EscapedPath())
	need := needManagement
	if rule != nil {
		need = rule.need
	}
	if need.kind == kindPublic {
		return r, nil
	}
	a, err := z.Resolver.ResolveACL(token)
	if err != nil {
		return nil, err
	}
	r = r.WithContext(context.WithValue(r.Context(), aclCtxKey{}, a))
	if a.IsManagement() {
		return r, nil
	}
	if !z.allowed(r, a, need) {
		return nil, errPermissionDenied
	}
	return r, nil
}

func (z *ACLAuthorizer) allowed(r *http.Request, a *acl.ACL, need need) bool {
	switch need.kind {
	case kindAnyToken:
		return true
	case kindManagement:
		return false
	case kindNodeRead:
		return a.AllowNodeRead()
	case kindNodeWrite:
		return a.AllowNodeWrite()
	case kindAgentRead:
		return a.AllowAgentRead()
	case kindAgentWrite:
		return a.AllowAgentWrite()
	case kindOperatorRead:
		return a.AllowOperatorRead()
	case kindOperatorWrite:
		return a.AllowOperatorWrite()
	case kindPluginList:
		return a.AllowPluginList()
	case kindPluginRead:
		return a.AllowPluginRead()
	case kindNamespace:
		ns := requestNamespace(r)
		if need.jobBody && r.URL.Query().Get("namespace") == "" {
			// The job's own namespace, as the job endpoints use it.
			if jns := jobBodyNamespace(r); jns != "" {
				ns = jns
			}
		}
		if need.bodyNS && r.URL.Query().Get("namespace") == "" {
			if bns := bodyField(r, "Namespace"); bns != "" {
				ns = bns
			}
		}
		if ns == "*" && need.wildcardOK {
			return true // the answer is filtered (filterByNamespace)
		}
		if need.objectNS != "" {
			ons, err := z.objectNamespace(r, need.objectNS)
			if err != nil {
				// The object's namespace could not be learnt; the
				// request's may not be it, so nothing is granted.
				return false
			}
			if ons != "" {
				ns = ons
			}
		}
		return a.AllowNamespaceAnyOperation(ns, need.caps...)
	case kindNamespaceAny:
		return a.AllowNamespace(namespaceFromPath(r))
	case kindEventStream:
		return allowEventTopics(r, a)
	case kindNodePool:
		if need.poolField != "" {
			pool := bodyField(r, need.poolField)
			if pool == "" {
				pool = "default"
			}
			return a.AllowNodePoolOperation(pool, need.caps[0])
		}
		segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
		if len(segs) < 4 || (need.nodeRead && !a.AllowNodeRead()) {
			return false
		}
		return a.AllowNodePoolOperation(segs[3], need.caps[0])
	}
	return false
}

// peekBody reads the (bounded) body and puts it back for the handler.
func peekBody(r *http.Request) []byte {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
	if err != nil {
		return nil
	}
	return b
}

// jobBodyNamespace reads Job.Namespace from a JSON body. "" when there is
// none (or the body is not JSON: the handler answers that).
func jobBodyNamespace(r *http.Request) string {
	var body struct {
		Job *struct{ Namespace string }
	}
	if json.Unmarshal(peekBody(r), &body) != nil || body.Job == nil {
		return ""
	}
	return body.Job.Namespace
}

// bodyField reads a top-level string field of a JSON body ("" if none).
func bodyField(r *http.Request, field string) string {
	var body map[string]any
	if json.Unmarshal(peekBody(r), &body) != nil {
		return ""
	}
	v, _ := body[field].(string)
	return v
}

// errReader returns err (the body's read error, kept for the handler) or EOF.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// objectNamespace finds the namespace of the object a path names (the
// segment after the object-kind prefix): "" when no such object exists
// (the request's namespace is checked, and the handler answers 404), an
// error when the lookup failed (the request is refused).
func (z *ACLAuthorizer) objectNamespace(r *http.Request, kind string) (string, error) {
	if z.RPC == nil {
		return "", nil
	}
	id := objectID(r.URL.EscapedPath(), kind)
	if id == "" {
		return "", nil
	}
	q := structs.QueryOptions{Region: r.URL.Query().Get("region"), AllowStale: true}
	if z.LookupToken != nil {
		q.AuthToken = z.LookupToken()
	}
	switch kind {
	case "alloc":
		var reply structs.SingleAllocResponse
		if err := z.RPC.RPC("Alloc.GetAlloc", &structs.AllocSpecificRequest{AllocID: id, QueryOptions: q}, &reply); err != nil || reply.Alloc == nil {
			return "", err
		}
		return reply.Alloc.Namespace, nil
	case "eval":
		var reply structs.SingleEvalResponse
		if err := z.RPC.RPC("Eval.GetEval", &structs.EvalSpecificRequest{EvalID: id, QueryOptions: q}, &reply); err != nil || reply.Eval == nil {
			return "", err
		}
		return reply.Eval.Namespace, nil
	case "deployment":
		var reply structs.SingleDeploymentResponse
		if err := z.RPC.RPC("Deployment.GetDeployment", &structs.DeploymentSpecificRequest{DeploymentID: id, QueryOptions: q}, &reply); err != nil || reply.Deployment == nil {
			return "", err
		}
		return reply.Deployment.Namespace, nil
	}
	return "", nil
}

// objectID picks the object's ID out of a path.
func objectID(path, kind string) string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case kind == "alloc" && len(segs) >= 3 && segs[1] == "allocation":
		return segs[2]
	case kind == "alloc" && len(segs) >= 5 && segs[1] == "client" && segs[2] == "allocation":
		return segs[3]
	case kind == "alloc" && len(segs) >= 5 && segs[1] == "client" && segs[2] == "fs":
		return segs[4]
	case kind == "eval" && len(segs) >= 3 && segs[1] == "evaluation":
		return segs[2]
	case kind == "deployment" && len(segs) >= 3 && segs[1] == "deployment":
		return segs[len(segs)-1]
	}
	return ""
}

// namespaceFromPath is the namespace a /v1/namespace/<name> path names.
func namespaceFromPath(r *http.Request) string {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if len(segs) >= 3 {
		return segs[2]
	}
	return ""
}

// allowEventTopics checks every topic asked for: job, allocation,
// evaluation, deployment and service events need read-job in the
// namespace, node events node:read; anything else (ACL topics, node
// pools, "*") management.
func allowEventTopics(r *http.Request, a *acl.ACL) bool {
	topics := r.URL.Query()["topic"]
	if len(topics) == 0 {
		return false // every topic
	}
	ns := requestNamespace(r)
	for _, t := range topics {
		name, _, _ := strings.Cut(t, ":")
		switch name {
		case "Job", "Allocation", "Evaluation", "Deployment", "Service":
			// Every namespace: the stream carries only the events of
			// those the token may read jobs in (EventNamespaceFilter).
			if ns != "*" && !a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob) {
				return false
			}
		case "Node", "NodeDrain", "NodeEvent":
			if !a.AllowNodeRead() {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// filterByNamespace drops the elements of a list answer (a slice of
// pointers to structs with a Namespace, or for namespaces a Name, field)
// the ACL does not grant caps on (any capability when caps is empty).
func filterByNamespace(obj any, a *acl.ACL, caps []string, field string) any {
	if a == nil || a.IsManagement() {
		return obj
	}
	return filterByField(obj, field, func(ns string) bool {
		if len(caps) == 0 {
			return a.AllowNamespace(ns)
		}
		return a.AllowNamespaceAnyOperation(ns, caps...)
	})
}

// filterByField keeps the elements of a slice of (pointers to) structs
// whose string field passes keep. Anything else it cannot read is dropped
// whole: an answer it does not understand is not leaked.
func filterByField(obj any, field string, keep func(string) bool) any {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Slice {
		return obj
	}
	out := reflect.MakeSlice(v.Type(), 0, v.Len())
	for i := 0; i < v.Len(); i++ {
		e := v.Index(i)
		s := e
		if s.Kind() == reflect.Pointer {
			if s.IsNil() {
				continue
			}
			s = s.Elem()
		}
		if s.Kind() != reflect.Struct {
			return reflect.MakeSlice(v.Type(), 0, 0).Interface()
		}
		f := s.FieldByName(field)
		if !f.IsValid() || f.Kind() != reflect.String {
			return reflect.MakeSlice(v.Type(), 0, 0).Interface()
		}
		if keep(f.String()) {
			out = reflect.Append(out, e)
		}
	}
	return out.Interface()
}

// filterAnswer applies the matched rule's list filter to a handler's
// answer.
func filterAnswer(r *http.Request, obj any) any {
	a := requestACL(r)
	if a == nil || a.IsManagement() || obj == nil {
		return obj
	}
	rule := matchRoute(r.Method, r.URL.EscapedPath())
	if rule == nil || rule.need.filter == filterNone {
		return obj
	}
	switch rule.need.filter {
	case filterWildcard:
		if requestNamespace(r) != "*" {
			return obj
		}
		return filterByNamespace(obj, a, rule.need.caps, "Namespace")
	case filterAlways:
		return filterByNamespace(obj, a, rule.need.caps, "Namespace")
	case filterNamespaces:
		return filterByNamespace(obj, a, nil, "Name")
	case filterNodePools:
		return filterByField(obj, "Name", func(name string) bool { return a.AllowNodePoolOperation(name, "read") })
	}
	return obj
}
