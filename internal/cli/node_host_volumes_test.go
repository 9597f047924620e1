package cli

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// node status lists host volumes as Nomad does: names in the summary, and
// with -verbose a table of name, read-only and host path.
func TestFormatNodeHostVolumes(t *testing.T) {
	n := &api.Node{ID: "0123456789abcdef", Name: "n1", NodePool: "default", Datacenter: "dc1", Status: "ready",
		HostVolumes: map[string]*api.HostVolumeInfo{
			"pgdata": {Path: "/srv/pg"},
			"certs":  {Path: "/etc/certs", ReadOnly: true},
		}}
	short := formatNode(n, nil, false, nil, false)
	if !strings.Contains(short, "Host Volumes = certs,pgdata") {
		t.Errorf("summary lacks the host volume names:\n%s", short)
	}
	verbose := formatNode(n, nil, true, nil, false)
	for _, want := range []string{"\nHost Volumes\nName    ReadOnly  Source\n", "certs   true      /etc/certs", "pgdata  false     /srv/pg"} {
		if !strings.Contains(verbose, want) {
			t.Errorf("verbose output lacks %q:\n%s", want, verbose)
		}
	}
}
