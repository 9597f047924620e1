package config

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1048576": 1 << 20, "8MiB": 8 << 20, "8 mib": 8 << 20, "1M": 1e6, "1MB": 1e6,
		"512KB": 512e3, "64KiB": 64 << 10, "2G": 2e9, "1GiB": 1 << 30, "100B": 100,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MB", "-1MB", "1.5MB", "8 parsecs", "99999999999999GiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): want an error", in)
		}
	}
}

// limits { http_max_body_size } is read from a file and a bad value is an
// error naming the key and where it was set.
func TestLimitsHTTPMaxBodySize(t *testing.T) {
	c, err := Parse("agent.hcl", []byte("limits {\n  http_max_body_size = \"2MiB\"\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.HTTPMaxBodySize != "2MiB" {
		t.Fatalf("http_max_body_size = %q", c.Limits.HTTPMaxBodySize)
	}
	for _, bad := range []string{"lots", "10"} {
		c, err := Parse("agent.hcl", []byte("data_dir = \"/tmp/x\"\nserver { enabled = true }\nlimits {\n  http_max_body_size = \""+bad+"\"\n}\n"))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate()
		if err == nil || !strings.Contains(err.Error(), "limits.http_max_body_size") || !strings.Contains(err.Error(), "agent.hcl:4") {
			t.Errorf("%q: Validate = %v, want an error naming limits.http_max_body_size at agent.hcl:4", bad, err)
		}
	}
}

// server { job_max_source_size } takes Nomad's size strings; a bad one is
// an error naming the key.
func TestServerJobMaxSourceSize(t *testing.T) {
	c, err := Parse("agent.hcl", []byte("data_dir = \"/tmp/x\"\nserver {\n  enabled = true\n  job_max_source_size = \"2M\"\n}\n"))
	if err != nil || c.Validate() != nil || c.Server.JobMaxSourceSize != "2M" {
		t.Fatalf("2M: %v %v", err, c.Validate())
	}
	c, err = Parse("agent.hcl", []byte("data_dir = \"/tmp/x\"\nserver {\n  enabled = true\n  job_max_source_size = \"big\"\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "server.job_max_source_size") {
		t.Fatalf("bad size: Validate = %v", err)
	}
}
