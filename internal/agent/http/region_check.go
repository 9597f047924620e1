package httpapi

import (
	"net/http"
	"slices"

	"github.com/drover-project/drover/internal/structs"
)

// otherRegion is the region a request names (?region=) when it is not this
// agent's own ("" for its own). Routes answered without an RPC that the
// servers forward by region (the volume and plugin lists, the event
// stream) call it so a region no server knows is refused as a forwarded
// call is (400 "No path to region"), instead of answered with this
// region's data.
func (s *server) otherRegion(r *http.Request) (string, error) {
	region := s.requestRegion(r)
	if region == s.cfg.Region {
		return "", nil
	}
	var known []string
	args := structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: s.cfg.Region, AllowStale: true}}
	if err := s.cfg.RPC.RPC("Region.List", &args, &known); err != nil {
		return "", err
	}
	if !slices.Contains(known, region) {
		return "", structs.NewErrCoded(http.StatusBadRequest, "No path to region %q", region)
	}
	return region, nil
}
