package cli

import (
	"strings"
	"testing"
)

// A usage error points at the help of the verb that was run, all its
// words included (Nomad: "For additional help try 'nomad namespace list
// -help'"), for every command that prints the hint.
func TestUsageErrorNamesWholeVerb(t *testing.T) {
	for _, tc := range []struct {
		args []string
		verb string
	}{
		{[]string{"namespace", "list", "extra"}, "namespace list"},
		{[]string{"node", "pool", "info"}, "node pool info"},
		{[]string{"operator", "autopilot", "set-config", "x"}, "operator autopilot set-config"},
		{[]string{"operator", "scheduler", "set-config", "-bogus"}, "operator scheduler set-config"},
		{[]string{"service", "delete", "api"}, "service delete"},
		{[]string{"job", "status", "a", "b"}, "job status"},
		{[]string{"node", "meta", "apply"}, "node meta apply"},
	} {
		_, errb, code := run(t, nil, tc.args...)
		want := "For additional help try 'drover " + tc.verb + " -help'"
		if code != 1 || !strings.Contains(errb, want) {
			t.Errorf("%v: exit %d, stderr %q; want the hint %q", tc.args, code, errb, want)
		}
	}
	// Every command's hint names a verb the CLI has.
	cmds := Commands(nil, nil)
	for name, f := range cmds {
		c, _ := f()
		if !strings.HasPrefix(c.Help(), "Usage: "+BinaryName+" ") {
			continue
		}
		hint := commandErrorText(c)
		verb := strings.TrimSuffix(strings.TrimPrefix(hint, "For additional help try 'drover "), " -help'")
		if _, ok := cmds[verb]; !ok {
			t.Errorf("%s: hint %q names no command", name, hint)
		}
	}
}

// An unknown flag is named, as Nomad's flag parsing names it, followed by
// the help hint; it is not reported as an argument count error. The verbs
// span the shared read helper (parseVerb) and those that parse their own
// flags.
func TestUnknownFlagNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		verb string
	}{
		{[]string{"namespace", "list", "-bogus"}, "namespace list"},
		{[]string{"namespace", "status", "-bogus", "default"}, "namespace status"},
		{[]string{"node", "pool", "list", "-bogus"}, "node pool list"},
		{[]string{"service", "list", "-bogus"}, "service list"},
		{[]string{"operator", "autopilot", "get-config", "-bogus"}, "operator autopilot get-config"},
		{[]string{"operator", "scheduler", "get-config", "-bogus"}, "operator scheduler get-config"},
		{[]string{"eval", "list", "-bogus"}, "eval list"},
		{[]string{"alloc", "status", "-bogus", "a1"}, "alloc status"},
		{[]string{"job", "status", "-bogus"}, "job status"},
		{[]string{"deployment", "list", "-bogus"}, "deployment list"},
		{[]string{"operator", "raft", "list-peers", "-bogus"}, "operator raft list-peers"},
		{[]string{"node", "meta", "apply", "-bogus", "k=v"}, "node meta apply"},
		{[]string{"eval", "delete", "-bogus", "e1"}, "eval delete"},
		{[]string{"tls", "ca", "create", "-bogus"}, "tls ca create"},
		{[]string{"tls", "cert", "create", "-bogus"}, "tls cert create"},
	} {
		out, errb, code := run(t, nil, tc.args...)
		want := "flag provided but not defined: -bogus\nFor additional help try 'drover " + tc.verb + " -help'\n"
		if code != 1 || errb != want || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and stderr %q", tc.args, code, out, errb, want)
		}
	}
}
