package structs

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func TestValidateTemplates(t *testing.T) {
	s := func(v string) *string { return &v }
	tmpl := func(mut func(tp *Template)) func(j *Job) {
		return func(j *Job) {
			tp := &Template{DestPath: s("local/app.conf"), EmbeddedTmpl: s("x"), ChangeMode: s("restart"), Perms: s("0644")}
			mut(tp)
			j.TaskGroups[0].Tasks[0].Templates = []*Template{tp}
		}
	}
	const p = `Task group "g", task "t": template "local/app.conf": `
	cases := []struct {
		name string
		mut  func(j *Job)
		want string // "" for valid
	}{
		{"valid", tmpl(func(*Template) {}), ""},
		{"into alloc dir", tmpl(func(tp *Template) { tp.DestPath = s("../alloc/shared.conf") }), ""},
		{"interpolated", tmpl(func(tp *Template) { tp.DestPath = s("${NOMAD_SECRETS_DIR}/env") }), ""},
		{"escaping", tmpl(func(tp *Template) { tp.DestPath = s("../../../etc/cron.d/x") }), `template "../../../etc/cron.d/x": destination "../../../etc/cron.d/x" escapes the allocation directory`},
		{"no destination", tmpl(func(tp *Template) { tp.DestPath = s("") }), `template[0]: destination is required`},
		{"no body", tmpl(func(tp *Template) { tp.EmbeddedTmpl = s("") }), p + "one of source or data is required"},
		{"both", tmpl(func(tp *Template) { tp.SourcePath = s("local/a.tpl") }), p + "source and data are mutually exclusive"},
		{"change_mode", tmpl(func(tp *Template) { tp.ChangeMode = s("reload") }), p + `change_mode "reload" is not one of noop, restart, signal, script`},
		{"signal without signal", tmpl(func(tp *Template) { tp.ChangeMode = s("signal") }), p + `change_signal is required`},
		{"signal env", tmpl(func(tp *Template) { tp.ChangeMode, tp.ChangeSignal, tp.Envvars = s("signal"), s("SIGHUP"), new(true) }), p + `change_mode "signal" cannot apply a template with env = true`},
		{"script without command", tmpl(func(tp *Template) { tp.ChangeMode = s("script") }), p + `change_script with a command is required`},
		{"perms", tmpl(func(tp *Template) { tp.Perms = s("rw-r--r--") }), p + `perms "rw-r--r--" is not an octal file mode`},
		{"splay", tmpl(func(tp *Template) { d := -time.Second; tp.Splay = &d }), p + `splay must not be negative`},
		{"wait", tmpl(func(tp *Template) {
			lo, hi := 10*time.Second, 2*time.Second
			tp.Wait = &api.WaitConfig{Min: &lo, Max: &hi}
		}), p + `wait min (10s) is greater than max (2s)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := validJob()
			c.mut(j)
			err := j.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
}
