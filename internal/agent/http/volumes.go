package httpapi

import (
	"net/http"
	"time"

	"github.com/hashicorp/go-bexpr"
	"github.com/hashicorp/nomad/api"

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
	waitUnchanged(r, &q, volumeIndex)
	setMeta(w, &structs.QueryMeta{Index: volumeIndex, KnownLeader: true})
	return []struct{}{}, nil
}

// volumeIndex is the index of the tables Drover never writes (volumes,
// plugins).
const volumeIndex = 1

// waitUnchanged serves a blocking query on something that never changes
// from index: one at or past it waits its full wait time, or until the
// caller goes away.
func waitUnchanged(r *http.Request, q *structs.QueryOptions, index uint64) {
	if q.MinQueryIndex < index {
		return
	}
	wait := q.MaxQueryTime
	if wait <= 0 {
		wait = maxQueryTime
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// /v1/volume/csi/<id> and /v1/volume/host/<id>: one volume. Drover has no
// CSI volumes (it runs no CSI plugins) and no dynamic host volumes, so no
// ID names one: a read is Nomad's "volume not found" (404), a delete
// Nomad's error for a volume that does not exist, and a CSI register
// Nomad's error for a plugin no node runs (400s and 404s, where Nomad's
// uncoded errors are 500s). Other sub-paths are "resource not found".
func (s *server) volumeSpecificRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/volume/")
	if err != nil {
		return nil, err
	}
	if len(parts) != 2 || (parts[0] != "csi" && parts[0] != "host") || parts[1] == "" {
		return nil, structs.NewErrCoded(http.StatusNotFound, "resource not found")
	}
	kind, id := parts[0], parts[1]
	switch {
	case r.Method == http.MethodGet:
		return s.volumeGet(w, r)
	case r.Method == http.MethodDelete:
		if _, err := boolParam(r, "force", false); err != nil {
			return nil, err
		}
		if _, err := s.otherRegion(r); err != nil {
			return nil, err
		}
		if kind == "csi" {
			return nil, structs.NewErrCoded(http.StatusNotFound, "volume not found: %s", id)
		}
		return nil, structs.NewErrCoded(http.StatusNotFound, "no such volume: %s", id)
	case r.Method == http.MethodPut && kind == "csi":
		return s.csiVolumeRegister(r)
	}
	return nil, errInvalidMethod
}

// volumeGet answers a read of a volume that does not exist, after a
// blocking query's wait (the volume tables never change).
func (s *server) volumeGet(w http.ResponseWriter, r *http.Request) (any, error) {
	var q structs.QueryOptions
	if err := s.parseQuery(r, &q); err != nil {
		return nil, err
	}
	if _, err := s.otherRegion(r); err != nil {
		return nil, err
	}
	waitUnchanged(r, &q, volumeIndex)
	setMeta(w, &structs.QueryMeta{Index: volumeIndex, KnownLeader: true})
	return nil, structs.NewErrCoded(http.StatusNotFound, "volume not found")
}

// csiVolumeRegister checks a register body ({"Volumes": [...]}) as Nomad
// does and refuses it: every volume names a plugin, and no node runs one.
func (s *server) csiVolumeRegister(r *http.Request) (any, error) {
	var in api.CSIVolumeRegisterRequest
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	if err := nullElement(&in, "CSIVolumeRegisterRequest"); err != nil {
		return nil, err
	}
	if _, err := s.otherRegion(r); err != nil {
		return nil, err
	}
	if len(in.Volumes) == 0 {
		return nil, structs.NewErrCoded(http.StatusBadRequest, "missing volume definition")
	}
	for i, v := range in.Volumes {
		switch {
		case v == nil:
			return nil, structs.NewErrCoded(http.StatusBadRequest, "Volumes[%d] is null", i)
		case v.ID == "":
			return nil, structs.NewErrCoded(http.StatusBadRequest, "Volumes[%d].ID: missing volume id", i)
		case v.PluginID == "":
			return nil, structs.NewErrCoded(http.StatusBadRequest, "Volumes[%d].PluginID: missing plugin id", i)
		}
	}
	return nil, structs.NewErrCoded(http.StatusBadRequest, "no CSI plugin named: %s could be found", in.Volumes[0].PluginID)
}
