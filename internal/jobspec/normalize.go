package jobspec

import (
	"time"

	"github.com/hashicorp/nomad/api"
)

// normalizeJob applies what Nomad's parser does after decoding, before any
// canonicalisation: identity from the block label, the periodic spec type,
// static ports as reserved ports and template defaults.
func normalizeJob(j *api.Job, label string) {
	if j.ID == nil {
		j.ID = &label
	}
	if j.Name == nil {
		name := *j.ID
		j.Name = &name
	}
	if j.Periodic != nil && (j.Periodic.Spec != nil || len(j.Periodic.Specs) > 0) {
		cron := "cron"
		j.Periodic.SpecType = &cron
	}
	for _, g := range j.TaskGroups {
		splitPorts(g.Networks)
		for _, t := range g.Tasks {
			if t.Resources != nil {
				splitPorts(t.Resources.Networks)
			}
			for _, tpl := range t.Templates {
				normalizeTemplate(tpl)
			}
		}
	}
}

// splitPorts moves ports with a static value into ReservedPorts; the rest
// stay dynamic.
func splitPorts(nets []*api.NetworkResource) {
	for _, n := range nets {
		var dyn []api.Port
		for _, p := range n.DynamicPorts {
			if p.Value > 0 {
				n.ReservedPorts = append(n.ReservedPorts, p)
			} else {
				dyn = append(dyn, p)
			}
		}
		n.DynamicPorts = dyn
	}
}

func normalizeTemplate(t *api.Template) {
	if t.ChangeMode == nil {
		m := "restart"
		t.ChangeMode = &m
	}
	if t.Perms == nil {
		p := "0644"
		t.Perms = &p
	}
	if t.Splay == nil {
		s := 5 * time.Second
		t.Splay = &s
	}
}
