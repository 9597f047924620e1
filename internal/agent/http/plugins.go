package httpapi

import (
	"net/http"
	"strings"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/plugins?type=csi: the CSI plugins the cluster's nodes run. Drover
// runs no CSI plugins, so the list is empty, as a Nomad cluster without
// any answers (`nomad plugin status` shows none instead of failing).
// Nomad answers [] without a type too. A blocking query waits its full
// wait time: the list never changes.
func (s *server) pluginsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	switch t := r.URL.Query().Get("type"); t {
	case "", "csi":
	default:
		return nil, structs.NewErrCoded(400, "type: unsupported plugin type %q (csi)", t)
	}
	return s.emptyList(w, r)
}

// /v1/plugin/csi/<id>: one CSI plugin. There are none, so every ID is
// "plugin not found" (404), as Nomad answers for an unknown one.
func (s *server) pluginSpecificRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	rest := strings.TrimPrefix(r.URL.Path, "/v1/plugin/")
	kind, id, _ := strings.Cut(rest, "/")
	if kind != "csi" || id == "" {
		return nil, structs.NewErrCoded(404, "resource not found")
	}
	var q structs.QueryOptions
	if err := s.parseQuery(r, &q); err != nil {
		return nil, err
	}
	if _, err := s.otherRegion(r); err != nil {
		return nil, err
	}
	return nil, structs.NewErrCoded(404, "plugin not found")
}
