package server

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// Job.Register checks host_volume ACL rules as Nomad does: a read-write
// request needs mount-readwrite on the source, a read-only one
// mount-readonly or mount-readwrite, and deny refuses both.
func TestACLHostVolumeMountRules(t *testing.T) {
	s, root := aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	if err := s.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "dev", Rules: `namespace "default" { policy = "write" }
host_volume "shared-*" { policy = "write" }
host_volume "certs" { policy = "read" }
host_volume "shared-secret" { policy = "deny" }`},
	}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	var toks structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{Type: "client", Policies: []string{"dev"}}}, WriteRequest: wr}, &toks); err != nil {
		t.Fatal(err)
	}
	dev := toks.Tokens[0].SecretID
	for _, tc := range []struct {
		name     string
		source   string
		readOnly bool
		allowed  bool
	}{
		{"read-write on a write glob", "shared-data", false, true},
		{"read-only on a read rule", "certs", true, true},
		{"read-write on a read rule", "certs", false, false},
		{"read-only on a write glob", "shared-logs", true, true},
		{"deny beats the glob", "shared-secret", true, false},
		{"no rule", "pgdata", true, false},
	} {
		job := testJob("vol", 1)
		job.TaskGroups[0].Tasks[0].Driver = "exec"
		job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"v": {Name: "v", Type: "host", Source: tc.source, ReadOnly: tc.readOnly}}
		err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Namespace: "default", AuthToken: dev}}, &structs.JobRegisterResponse{})
		switch {
		case tc.allowed && err != nil:
			t.Errorf("%s: register refused: %v", tc.name, err)
		case !tc.allowed && (err == nil || !strings.Contains(err.Error(), "Permission denied")):
			t.Errorf("%s: register = %v, want Permission denied", tc.name, err)
		}
	}
	// The management token may mount anything.
	job := testJob("vol", 1)
	job.TaskGroups[0].Tasks[0].Driver = "exec"
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"v": {Name: "v", Type: "host", Source: "pgdata"}}
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Namespace: "default", AuthToken: root}}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatalf("register with management: %v", err)
	}
}
