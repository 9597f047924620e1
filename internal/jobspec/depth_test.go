package jobspec

import (
	"strings"
	"testing"
)

func nestedJobspec(open, close string, depth int) string {
	return `job "x" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
        nest = ` + strings.Repeat(open, depth) + strings.Repeat(close, depth) + `
      }
    }
  }
}
`
}

// A jobspec nested two million brackets deep overflowed the parser's stack,
// a fatal error that took the agent serving /v1/jobs/parse down with it.
func TestParseRefusesDeepNesting(t *testing.T) {
	for name, src := range map[string]string{
		"lists":          nestedJobspec("[", "]", 2_000_000),
		"objects":        nestedJobspec("{a=", "}", 200),
		"parens":         nestedJobspec("(", ")", 200),
		"interpolations": nestedJobspec(`"${`, `}"`, 60),
		"json":           `{"job":{"x":{"group":{"g":{"task":{"t":{"driver":"raw_exec","config":{"nest":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}}}}}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := "deep.hcl"
			if name == "json" {
				path = "deep.json"
			}
			_, err := Parse(path, []byte(src), ParseConfig{})
			if err == nil || !strings.Contains(err.Error(), "more than 100 levels deep") {
				t.Fatalf("want a nesting error, got %v", err)
			}
		})
	}
	// The variables file sent with /v1/jobs/parse goes through the same check.
	_, err := Parse("ok.hcl", []byte(nestedJobspec("[", "]", 1)), ParseConfig{VarContent: "x = " + strings.Repeat("[", 500)})
	if err == nil || !strings.Contains(err.Error(), "more than 100 levels deep") {
		t.Fatalf("deep VarContent: want a nesting error, got %v", err)
	}
}

// Brackets in text (strings, comments, heredocs, escaped interpolations)
// are not nesting, and a spec within the limit parses.
func TestParseNestingCountsOnlySyntax(t *testing.T) {
	many := strings.Repeat("[{(", 200)
	src := `# ` + many + `
// ` + many + `
/* ` + many + `
*/
job "x" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo '` + many + `' $${x} \" ` + many + `"]
        script  = <<-EOT
          ` + many + ` ${NOMAD_TASK_NAME}
          EOT
        nest    = ` + strings.Repeat("[", 80) + strings.Repeat("]", 80) + `
      }
    }
  }
}
`
	job, err := Parse("ok.hcl", []byte(src), ParseConfig{})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	cfg := job.TaskGroups[0].Tasks[0].Config
	if s, _ := cfg["script"].(string); !strings.Contains(s, many) {
		t.Fatalf("heredoc not kept: %q", s)
	}
}
