package server

import (
	"net/http"

	"github.com/hashicorp/go-bexpr"

	"github.com/drover-project/drover/internal/structs"
)

// maxFilterSteps bounds the parser steps (go-bexpr's "expressions": grammar
// rules tried, about twenty per character) one ?filter= may take. go-bexpr's
// default of two million lets one query string of ~100 KB cost ~60 MB and
// ~0.7 s to parse, and deep parenthesis nesting about a second; this bound
// keeps every filter under ~15 MB and ~0.2 s while still admitting ~25 KB of
// expression (hundreds of `ID == "..." or` clauses).
const maxFilterSteps = 500000

// listFilter is one request's ?filter= expression (go-bexpr, the language of
// Nomad's list endpoints), compiled once and evaluated against each object a
// list RPC reads. As in Nomad, the expression sees the stored object (the
// whole Job, Allocation, Node, ...) under its Go/JSON field names, not the
// list stub built from it, and it is applied before pagination, so per_page
// and next_token count matching objects only.
//
// A listFilter belongs to one request: go-bexpr caches compiled regular
// expressions inside the syntax tree while evaluating.
type listFilter struct{ ev *bexpr.Evaluator }

// compileFilter parses expr. An empty expr gives a nil filter, which matches
// everything; a malformed one is a 400 that carries go-bexpr's reason.
func compileFilter(expr string) (*listFilter, error) {
	if expr == "" {
		return nil, nil
	}
	ev, err := bexpr.CreateEvaluator(expr, bexpr.WithMaxExpressions(maxFilterSteps))
	if err != nil {
		return nil, structs.NewErrCoded(http.StatusBadRequest, "failed to read filter expression: %v", err)
	}
	return &listFilter{ev: ev}, nil
}

// match reports whether obj passes the filter. An expression that cannot be
// evaluated against obj (a selector naming no field of it, an operator its
// value does not support) is a 400 naming the selector: answering with an
// empty or unfiltered list would let a script act on the wrong objects.
func (f *listFilter) match(obj any) (bool, error) {
	if f == nil {
		return true, nil
	}
	ok, err := f.ev.Evaluate(obj)
	if err != nil {
		return false, structs.NewErrCoded(http.StatusBadRequest, "failed to apply filter expression: %v", err)
	}
	return ok, nil
}

// keep returns match as paginate's keep function, nil (keep everything)
// for a nil filter.
func keep[T any](f *listFilter) func(T) (bool, error) {
	if f == nil {
		return nil
	}
	return func(obj T) (bool, error) { return f.match(obj) }
}

// errIncompatibleFilter answers a list that got both ?filter= and one of the
// endpoint's own field parameters (Nomad refuses the mix the same way).
var errIncompatibleFilter = structs.NewErrCoded(http.StatusBadRequest,
	"Filter expression cannot be used with other filter parameters")
