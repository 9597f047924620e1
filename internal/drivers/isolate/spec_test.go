package isolate

import (
	"strings"
	"testing"
)

func TestResolveCaps(t *testing.T) {
	def := DefaultCaps()
	for _, c := range []struct {
		name      string
		allow     []string
		add, drop []string
		want      string
		wantErr   string
	}{
		{"default", def, nil, nil, strings.Join(sorted(def), ","), ""},
		{"drop one", def, nil, []string{"CAP_CHOWN"}, strings.Join(sorted(without(def, "chown")), ","), ""},
		{"drop all add one", def, []string{"chown"}, []string{"all"}, "chown", ""},
		{"add outside allow", def, []string{"net_raw", "sys_admin"}, nil, "", "net_raw, sys_admin are not allowed"},
		{"allow all", []string{"all"}, []string{"sys_admin"}, []string{"all"}, "sys_admin", ""},
		{"allow narrows default", []string{"chown"}, nil, nil, "chown", ""},
		{"unknown", def, []string{"flying"}, nil, "", `cap_add: unknown capability "flying"`},
	} {
		got, err := ResolveCaps(def, c.allow, c.add, c.drop)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: want error %q, got %v %v", c.name, c.wantErr, got, err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != c.want {
			t.Errorf("%s: got %v %v, want %s", c.name, got, err, c.want)
		}
	}
}

func sorted(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func without(in []string, x string) []string {
	var out []string
	for _, s := range in {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}

func TestLookupUser(t *testing.T) {
	c, err := LookupUser("nobody")
	if err != nil || c.Uid != 65534 {
		t.Fatalf("nobody: %+v %v", c, err)
	}
	if c, err := LookupUser("1000:2000"); err != nil || c.Uid != 1000 || c.Gid != 2000 {
		t.Errorf("numeric: %+v %v", c, err)
	}
	if _, err := LookupUser("no-such-user"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("unknown user: %v", err)
	}
}
