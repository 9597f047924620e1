package server

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Two single-server regions whose servers join one gossip pool: each lists
// both regions (sorted), keeps its own Raft cluster and state, and serves a
// request for the other region by forwarding it there; a region nobody
// gossips for is still "No path to region".
func TestRegionsFederate(t *testing.T) {
	east := gossipServerIn(t, "e1", t.TempDir(), 1, "east")
	west := gossipServerIn(t, "w1", t.TempDir(), 1, "west")
	waitFor(t, 10*time.Second, "both leaders", func() bool { return east.IsLeader() && west.IsLeader() })
	if n, err := west.Join([]string{serfAddr(east)}); err != nil || n != 1 {
		t.Fatalf("join: %d, %v", n, err)
	}
	var regions []string
	waitFor(t, 10*time.Second, "both regions listed on both servers", func() bool {
		for _, s := range []*Server{east, west} {
			regions = nil
			if err := s.RPC("Region.List", &structs.GenericRequest{}, &regions); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(regions, []string{"east", "west"}) {
				return false
			}
		}
		return true
	})
	if len(raftServers(east)) != 1 || len(raftServers(west)) != 1 {
		t.Fatalf("regions merged Raft: east %v, west %v", raftServers(east), raftServers(west))
	}

	// A job registered through east for region west lives in west only.
	job := testJob("web", 1)
	job.Region = "west"
	var resp structs.JobRegisterResponse
	if err := east.RPC("Job.Register", &structs.JobRegisterRequest{Job: job,
		WriteRequest: structs.WriteRequest{Region: "west", Namespace: "default"}}, &resp); err != nil {
		t.Fatalf("register in west through east: %v", err)
	}
	if j, _ := west.State().JobByID(nil, "default", "web"); j == nil {
		t.Fatal("the job is not in west's state")
	}
	if j, _ := east.State().JobByID(nil, "default", "web"); j != nil {
		t.Fatal("the job landed in east's state")
	}
	var leader string
	if err := east.RPC("Status.Leader", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: "west"}}, &leader); err != nil || leader != west.RPCAddr() {
		t.Fatalf("west's leader through east: %q, %v; want %q", leader, err, west.RPCAddr())
	}
	var list structs.JobListResponse
	err := east.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{Region: "north", Namespace: "default"}}, &list)
	if code, _ := structs.ErrorCode(err); code != 400 || err == nil || !strings.Contains(err.Error(), `No path to region "north"`) {
		t.Fatalf("unknown region: %v, want 400 No path to region", err)
	}
}
