package httpapi

import (
	"net/http"
	"time"

	"github.com/hashicorp/go-bexpr"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/volumes?type=csi|host: the volumes registered with the cluster.
// Drover runs no CSI plugins and has no dynamic host volumes, so no volume
// can be registered and the list is empty, as a Nomad cluster without CSI
// plugins answers (`nomad volume status` shows none instead of failing).
// Nomad answers [] without a type too; every region of Drover answers the
// same. A blocking query (?index= at or past
// the list's index) waits its full wait time: the list never changes.
func (s *server) volumesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	switch t := r.URL.Query().Get("type"); t {
	case "", "csi", "host":
	default:
		return nil, structs.NewErrCoded(400, "type: unsupported volume type %q (csi or host)", t)
	}
	return s.emptyList(w, r)
}

// emptyList answers a list that is always empty (index 1) for the kinds
// Drover has none of (volumes, plugins). A blocking query (?index= at or
// past 1) waits its full wait time, or until the caller goes away. Every
// region answers the same, but a region no server knows is refused.
func (s *server) emptyList(w http.ResponseWriter, r *http.Request) (any, error) {
	var q structs.QueryOptions
	if err := s.parseQuery(r, &q); err != nil {
		return nil, err
	}
	if _, err := s.otherRegion(r); err != nil {
		return nil, err
	}
	// A malformed ?filter= is refused as by every list, though nothing
	// would be filtered.
	if q.Filter != "" {
		if _, err := bexpr.CreateEvaluator(q.Filter, bexpr.WithMaxExpressions(500000)); err != nil {
			return nil, structs.NewErrCoded(http.StatusBadRequest, "failed to read filter expression: %v", err)
		}
	}
	const index = 1
	if q.MinQueryIndex >= index {
		wait := q.MaxQueryTime
		if wait <= 0 {
			wait = maxQueryTime
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	setMeta(w, &structs.QueryMeta{Index: index, KnownLeader: true})
	return []struct{}{}, nil
}
