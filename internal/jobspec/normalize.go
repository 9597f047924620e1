package jobspec

import (
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"
)

// normalizeJob applies what Nomad's parser does after decoding, before any
// canonicalisation: ID and Name from the block label, the periodic spec
// type, static ports as reserved ports, template and vault defaults, job and
// group vault and secret blocks pushed into the tasks, the default workload
// identity, and the legacy disconnect attributes translated. (The operator
// and scaling-type defaults are written while decoding, and job-level tasks
// are put first there.)
func normalizeJob(d *decoder, j *api.Job, label string) {
	// Both default to the block label: `id = "x"` does not rename the job.
	if j.ID == nil {
		id := label
		j.ID = &id
	}
	if j.Name == nil {
		name := label
		j.Name = &name
	}
	// Any crons attribute, even `crons = []`, marks the job cron-periodic,
	// as Nomad's parse does.
	if j.Periodic != nil && (j.Periodic.Spec != nil || j.Periodic.Specs != nil) {
		cron := "cron"
		j.Periodic.SpecType = &cron
	}
	for _, g := range j.TaskGroups {
		splitPorts(g.Networks)
		d.translateDisconnect(g)
		groupVault := d.extras.groupVaults[g]
		if groupVault == nil {
			groupVault = d.extras.vault
		}
		for _, t := range g.Tasks {
			if t.Resources != nil {
				splitPorts(t.Resources.Networks)
			}
			for _, tpl := range t.Templates {
				normalizeTemplate(tpl)
			}
			if t.Vault == nil && groupVault != nil {
				v := *groupVault
				t.Vault = &v
			}
			if t.Vault != nil {
				normalizeVault(t.Vault)
			}
			t.Secrets = inheritSecrets(t.Secrets, d.extras.secrets)
			defaultIdentity(t)
		}
	}
}

// translateDisconnect turns the group attributes that the disconnect block
// replaced into that block when the group has none, and warns: Nomad refuses
// a group that sets both forms.
func (d *decoder) translateDisconnect(g *api.TaskGroup) {
	name := ""
	if g.Name != nil {
		name = *g.Name
	}
	if g.MaxClientDisconnect != nil && g.Disconnect == nil {
		g.Disconnect = &api.DisconnectStrategy{LostAfter: g.MaxClientDisconnect}
		g.MaxClientDisconnect = nil
		d.warnings = append(d.warnings, fmt.Sprintf("group %q: max_client_disconnect is deprecated; use disconnect { lost_after = %q }", name, g.Disconnect.LostAfter.String()))
	}
	if g.StopAfterClientDisconnect != nil && (g.Disconnect == nil || g.Disconnect.StopOnClientAfter == nil) {
		if g.Disconnect == nil {
			g.Disconnect = &api.DisconnectStrategy{}
		}
		g.Disconnect.StopOnClientAfter = g.StopAfterClientDisconnect
		g.StopAfterClientDisconnect = nil
		d.warnings = append(d.warnings, fmt.Sprintf("group %q: stop_after_client_disconnect is deprecated; use disconnect { stop_on_client_after = %q }", name, g.Disconnect.StopOnClientAfter.String()))
	}
	if g.PreventRescheduleOnLost != nil && (g.Disconnect == nil || g.Disconnect.Replace == nil) {
		if g.Disconnect == nil {
			g.Disconnect = &api.DisconnectStrategy{}
		}
		replace := !*g.PreventRescheduleOnLost
		g.Disconnect.Replace = &replace
		g.PreventRescheduleOnLost = nil
		d.warnings = append(d.warnings, fmt.Sprintf("group %q: prevent_reschedule_on_lost is deprecated; use disconnect { replace = %t }", name, replace))
	}
}

// normalizeVault applies the vault block defaults Nomad's parser writes.
func normalizeVault(v *api.Vault) {
	if v.Env == nil {
		t := true
		v.Env = &t
	}
	if v.DisableFile == nil {
		f := false
		v.DisableFile = &f
	}
	if v.ChangeMode == nil {
		m := "restart"
		v.ChangeMode = &m
	}
}

// inheritSecrets adds the job-level secrets a task does not define itself.
func inheritSecrets(own, job []*api.Secret) []*api.Secret {
	for _, js := range job {
		found := false
		for _, s := range own {
			if s.Name == js.Name {
				found = true
				break
			}
		}
		if !found {
			c := *js
			own = append(own, &c)
		}
	}
	return own
}

// defaultIdentity moves an identity block without a name (or named
// "default") into Task.Identity: it is the task's default workload identity,
// the others are alternates.
func defaultIdentity(t *api.Task) {
	var rest []*api.WorkloadIdentity
	for _, id := range t.Identities {
		if (id.Name == "" || id.Name == "default") && t.Identity == nil {
			t.Identity = id
			continue
		}
		rest = append(rest, id)
	}
	t.Identities = rest
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

// normalizeTemplate writes the template defaults Nomad's parser writes (the
// rest, such as the change signal and delimiters, are left to
// api.Template.Canonicalize, as Nomad leaves them).
func normalizeTemplate(t *api.Template) {
	if t.ErrMissingKey == nil {
		f := false
		t.ErrMissingKey = &f
	}
	if cs := t.ChangeScript; cs != nil {
		if cs.Args == nil {
			cs.Args = []string{}
		}
		if cs.Timeout == nil {
			d := 5 * time.Second
			cs.Timeout = &d
		}
		if cs.FailOnError == nil {
			f := false
			cs.FailOnError = &f
		}
	}
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
