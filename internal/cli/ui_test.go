package cli

import "testing"

// drover ui's job URLs are Nomad's, and an ID with an "@" of its own keeps
// its namespace in the URL: the page splits <id>@<namespace> at the last
// "@", so /ui/jobs/team@x opened job "team" in namespace "x".
func TestUIJobPath(t *testing.T) {
	for _, c := range []struct{ id, ns, want string }{
		{"web", "default", "/ui/jobs/web"},
		{"web", "", "/ui/jobs/web"},
		{"web", "prod", "/ui/jobs/web@prod"},
		{"team@x", "default", "/ui/jobs/team@x@default"},
		{"team@x", "prod", "/ui/jobs/team@x@prod"},
		{"a b/c", "default", "/ui/jobs/a%20b%2Fc"},
	} {
		if got := uiJobPath(c.id, c.ns); got != c.want {
			t.Errorf("uiJobPath(%q, %q) = %q, want %q", c.id, c.ns, got, c.want)
		}
	}
}
