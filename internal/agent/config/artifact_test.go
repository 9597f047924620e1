package config

import (
	"strings"
	"testing"
	"time"
)

// client.artifact parses every key Nomad has; sizes that cannot be read
// and negative limits are refused naming the key.
func TestClientArtifactConfig(t *testing.T) {
	c, err := Parse("a.hcl", []byte(`data_dir = "/tmp/x"
client {
  enabled = true
  artifact {
    http_read_timeout              = "5m"
    http_max_size                  = "1GiB"
    gcs_timeout                    = "1m"
    git_timeout                    = "1m"
    hg_timeout                     = "1m"
    s3_timeout                     = "1m"
    decompression_size_limit       = "2GB"
    decompression_file_count_limit = 10
    disable_filesystem_isolation   = true
    filesystem_isolation_extra_paths = ["f:r:/opt/shared"]
    set_environment_variables      = "HTTP_PROXY,HTTPS_PROXY"
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Client.Artifact
	if a.HTTPReadTimeout != 5*time.Minute || a.HTTPMaxSize != "1GiB" || *a.DecompressionFileCountLimit != 10 || !*a.DisableFilesystemIsolation {
		t.Fatalf("artifact = %+v", a)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for key, src := range map[string]string{
		"client.artifact.http_max_size":                  `http_max_size = "lots"`,
		"client.artifact.decompression_size_limit":       `decompression_size_limit = "5XB"`,
		"client.artifact.decompression_file_count_limit": `decompression_file_count_limit = -1`,
		"client.artifact.http_read_timeout":              `http_read_timeout = "-1s"`,
	} {
		c, err := Parse("b.hcl", []byte("data_dir = \"/tmp/x\"\nclient {\n  enabled = true\n  artifact {\n    "+src+"\n  }\n}"))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v", src, err)
		}
	}
}
