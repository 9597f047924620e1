package structs

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// validateTemplates checks the tasks' template blocks: what the client
// could only find out when the task is placed (a destination leaving the
// allocation directory, an unknown change_mode, bad perms) is refused at
// submit, naming the task and the template.
func (j *Job) validateTemplates(v *ValidationError) {
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			if t == nil {
				continue
			}
			for i, tmpl := range t.Templates {
				if tmpl == nil {
					continue
				}
				p := fmt.Sprintf("Task group %q, task %q: template[%d]", tg.Name, t.Name, i)
				if d := strVal(tmpl.DestPath); d != "" {
					p = fmt.Sprintf("Task group %q, task %q: template %q", tg.Name, t.Name, d)
				}
				validateTemplate(p, tmpl, v)
			}
		}
	}
}

func strVal(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func validateTemplate(p string, t *Template, v *ValidationError) {
	dest, src, data := strVal(t.DestPath), strVal(t.SourcePath), strVal(t.EmbeddedTmpl)
	if dest == "" {
		v.add("%s: destination is required", p)
	} else if !strings.Contains(dest, "${") {
		// Relative to the task directory, as the client resolves it; it
		// may reach ../alloc but not leave the allocation directory.
		if c := path.Join("/alloc/task", dest); !strings.HasPrefix(c, "/alloc/") || c == "/alloc/task" {
			v.add("%s: destination %q escapes the allocation directory", p, dest)
		}
	}
	switch {
	case src == "" && data == "":
		v.add("%s: one of source or data is required", p)
	case src != "" && data != "":
		v.add("%s: source and data are mutually exclusive", p)
	}
	env := t.Envvars != nil && *t.Envvars
	mode := strVal(t.ChangeMode)
	switch mode {
	case "", "noop", "restart":
	case "signal":
		if strVal(t.ChangeSignal) == "" {
			v.add("%s: change_signal is required when change_mode is \"signal\"", p)
		}
		if env {
			v.add("%s: change_mode \"signal\" cannot apply a template with env = true (the environment only changes on a restart)", p)
		}
	case "script":
		if t.ChangeScript == nil || strVal(t.ChangeScript.Command) == "" {
			v.add("%s: change_script with a command is required when change_mode is \"script\"", p)
		} else if t.ChangeScript.Timeout != nil && *t.ChangeScript.Timeout < 0 {
			v.add("%s: change_script timeout must not be negative", p)
		}
	default:
		v.add("%s: change_mode %q is not one of noop, restart, signal, script", p, mode)
	}
	if t.Splay != nil && *t.Splay < 0 {
		v.add("%s: splay must not be negative (got %s)", p, *t.Splay)
	}
	if perms := strVal(t.Perms); perms != "" {
		if n, err := strconv.ParseUint(perms, 8, 32); err != nil || n > 0o7777 {
			v.add("%s: perms %q is not an octal file mode (such as \"644\")", p, perms)
		}
	}
	if w := t.Wait; w != nil {
		if (w.Min != nil && *w.Min < 0) || (w.Max != nil && *w.Max < 0) {
			v.add("%s: wait min and max must not be negative", p)
		} else if w.Min != nil && w.Max != nil && *w.Max > 0 && *w.Min > *w.Max {
			v.add("%s: wait min (%s) is greater than max (%s)", p, *w.Min, *w.Max)
		}
	}
	if l, r := strVal(t.LeftDelim), strVal(t.RightDelim); (l == "") != (r == "") {
		v.add("%s: left_delimiter and right_delimiter must be set together", p)
	}
}
