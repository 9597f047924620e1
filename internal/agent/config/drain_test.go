package config

import (
	"strings"
	"testing"
	"time"
)

// client.drain_on_shutdown parses from HCL and JSON; a negative deadline
// is refused with an error naming the field, a wrong type names it too.
func TestDrainOnShutdown(t *testing.T) {
	for name, src := range map[string]string{
		"a.hcl": `data_dir = "/tmp/x"
client {
  enabled = true
  drain_on_shutdown {
    deadline           = "1m"
    force              = true
    ignore_system_jobs = true
  }
}`,
		"a.json": `{"data_dir": "/tmp/x", "client": {"enabled": true, "drain_on_shutdown": {"deadline": "1m", "force": true, "ignore_system_jobs": true}}}`,
	} {
		c, err := Parse(name, []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d := c.Client.DrainOnShutdown
		if d == nil || d.Deadline != time.Minute || d.Force == nil || !*d.Force || d.IgnoreSystemJobs == nil || !*d.IgnoreSystemJobs {
			t.Fatalf("%s: drain_on_shutdown = %+v", name, d)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}

	c, err := Parse("neg.hcl", []byte(`data_dir = "/tmp/x"
client {
  enabled = true
  drain_on_shutdown { deadline = "-5s" }
}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "client.drain_on_shutdown.deadline") {
		t.Fatalf("negative deadline: %v", err)
	}
	_, err = Parse("type.hcl", []byte(`client {
  enabled = true
  drain_on_shutdown { deadline = 10 }
}`))
	if err == nil || !strings.Contains(err.Error(), "client.drain_on_shutdown.deadline") {
		t.Fatalf("numeric deadline: %v", err)
	}
	_, err = Parse("typo.hcl", []byte(`client {
  enabled = true
  drain_on_shutdown { dedline = "1m" }
}`))
	if err == nil || !strings.Contains(err.Error(), "client.drain_on_shutdown.dedline") {
		t.Fatalf("unknown key: %v", err)
	}
}
