package server

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/serf/serf"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// Regions: servers of every region may share one gossip pool (a server of
// one region joins a server of another, as Nomad's federation does). Each
// region keeps its own Raft cluster and state (serf_reconcile.go and
// serf_bootstrap.go only look at their own region's servers); the pool
// tells a server which regions exist and which servers answer for them,
// and a request for another region is forwarded to one of those, which
// serves it as any request of its own region.

// regionServers lists the alive servers of every region in the gossip
// pool, this server's region included.
func (s *Server) regionServers() map[string][]*serverParts {
	out := map[string][]*serverParts{}
	for _, m := range s.Members() {
		p, ok := parseServer(m)
		if !ok || m.Status != serf.StatusAlive || p.Region == "" {
			continue
		}
		out[p.Region] = append(out[p.Region], p)
	}
	return out
}

// knownRegions is the sorted list of regions with an alive server, always
// including this server's own.
func (s *Server) knownRegions() []string {
	seen := map[string]bool{s.config.Region: true}
	for r := range s.regionServers() {
		seen[r] = true
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// forwardRegion sends a request for another region to one of its servers,
// picked at random (the one that answers forwards it to its leader), with
// the deadline and cancellation of a forward to the leader (forwardCall),
// over a session that verifies the server's certificate for that region.
// A server that cannot be reached (it went away and the pool has not yet
// noticed) never got the request, so the next one is tried; so is the
// next for a read whose server went away after taking it. With no alive
// server of that region in the pool, or none reachable, the answer is
// Nomad's 400 "No path to region".
func (s *Server) forwardRegion(region, method string, args, reply any) error {
	servers := s.regionServers()[region]
	if len(servers) == 0 {
		return structs.NewErrCoded(400, "No path to region %q", region)
	}
	// With mTLS the server dialled must name server.<region>.nomad.
	ctx := droverrpc.WithRegion(structs.RequestContext(args), region)
	first := int(rnd(int64(len(servers))))
	var unreachable []string
	for i := range servers {
		p := servers[(first+i)%len(servers)]
		err := s.forwardCallTo(ctx, fmt.Sprintf("region %q's server", region), p.Addr, method, args, reply)
		if err == nil || ctx.Err() != nil {
			return err
		}
		// A read whose server went away after taking it (the pooled
		// session had not noticed yet) is sent on, as one that never left.
		if !safeToResend(args, err) {
			return err
		}
		unreachable = append(unreachable, err.Error())
	}
	return structs.NewErrCoded(400, "No path to region %q: no server of it could be reached (%s)", region, strings.Join(unreachable, "; "))
}
