package agent

import (
	"strings"
	"testing"
)

// `drover agent -h` lists the flags that build a server cluster: an
// operator looking for how to join servers found none of them there,
// though the agent accepts all (as Nomad's).
func TestAgentHelpListsClusterFlags(t *testing.T) {
	help := (&Command{}).Help()
	for _, flag := range []string{"-bootstrap-expect=", "-join=", "-retry-join=", "-retry-interval=", "-retry-max=", "-encrypt=", "-rejoin"} {
		if !strings.Contains(help, flag) {
			t.Errorf("agent help lacks %s:\n%s", flag, help)
		}
	}
}
