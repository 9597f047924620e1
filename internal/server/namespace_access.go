package server

import "github.com/drover-project/drover/internal/structs"

// namespaceReadable is the seam through which lists across namespaces
// (?namespace=*) and the namespace list are filtered by the request's ACL
// token: it returns the predicate that keeps the namespaces the token may
// read. With ACLs off every namespace is readable.
//
// The ACL work plugs in here by setting Server.namespaceACL: resolve the
// token to its ACL object and return a predicate that allows a namespace
// when the ACL grants any capability in it (as Nomad's list endpoints do),
// or an error (403) when the token cannot be resolved.
func (s *Server) namespaceReadable(q *structs.QueryOptions) (func(ns string) bool, error) {
	if s.namespaceACL == nil {
		return func(string) bool { return true }, nil
	}
	return s.namespaceACL(q.AuthToken)
}

// listNamespaces is the namespace predicate of a list request: nil (no
// filtering) for one namespace, whose access the authorization seam
// checks before the request runs; the readable namespaces for "*".
func (s *Server) listNamespaces(q *structs.QueryOptions) (func(ns string) bool, error) {
	if q.Namespace != "*" {
		return nil, nil
	}
	return s.namespaceReadable(q)
}

// onlyReadable drops the items of namespaces readable refuses; a nil
// readable keeps every item.
func onlyReadable[T any](items []T, readable func(string) bool, nsOf func(T) string) []T {
	if readable == nil {
		return items
	}
	out := items[:0:0]
	for _, it := range items {
		if readable(nsOf(it)) {
			out = append(out, it)
		}
	}
	return out
}

// nodePoolReadable is the seam through which the node pool list is
// filtered by the request's token (Nomad lists the pools a token may read
// with node_pool "read"). With ACLs off, or until the ACL system sets
// Server.nodePoolACL, every pool is listed.
func (s *Server) nodePoolReadable(q *structs.QueryOptions) (func(pool string) bool, error) {
	if s.nodePoolACL == nil {
		return nil, nil
	}
	return s.nodePoolACL(q.AuthToken)
}
