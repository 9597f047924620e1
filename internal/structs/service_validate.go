package structs

import (
	"fmt"
	"strconv"
)

// validateNomadServices checks the nomad-provider services of a group and
// its tasks (the ones the client registers and checks): a port label must
// name a port of the group's (or a task's) network or be a number, a check
// needs an interval and a timeout, an http check a path, and a service's
// task must exist.
func (tg *TaskGroup) validateNomadServices(prefix string, v *ValidationError) {
	labels := map[string]bool{}
	tasks := map[string]bool{}
	nets := append([]*NetworkResource(nil), tg.Networks...)
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		tasks[t.Name] = true
		if t.Resources != nil {
			nets = append(nets, t.Resources.Networks...)
		}
	}
	for _, n := range nets {
		if n == nil {
			continue
		}
		for _, p := range append(append([]Port{}, n.ReservedPorts...), n.DynamicPorts...) {
			labels[p.Label] = true
		}
	}
	check := func(sp string, s *Service) {
		if s == nil || s.Provider != ServiceProviderNomad {
			return
		}
		sp = fmt.Sprintf("%s: service %q", sp, s.Name)
		validPort := func(label string) bool {
			if label == "" || labels[label] {
				return true
			}
			n, err := strconv.Atoi(label)
			return err == nil && n > 0 && n < MaxValidPort
		}
		if !validPort(s.PortLabel) {
			v.add("%s: port label %q does not exist in the group's network", sp, s.PortLabel)
		}
		if s.TaskName != "" && !tasks[s.TaskName] {
			v.add("%s: task %q does not exist in the group", sp, s.TaskName)
		}
		for i, c := range s.Checks {
			cp := fmt.Sprintf("%s: Checks[%d] %q", sp, i, c.Name)
			if c.Type != "http" && c.Type != "tcp" {
				continue // refused with its reason by the unsupported check
			}
			if c.Interval <= 0 {
				v.add("%s: interval must be positive", cp)
			}
			if c.Timeout <= 0 {
				v.add("%s: timeout must be positive", cp)
			}
			if c.Type == "http" && c.Path == "" {
				v.add("%s: an http check needs a path", cp)
			}
			if !validPort(c.PortLabel) {
				v.add("%s: port label %q does not exist in the group's network", cp, c.PortLabel)
			}
			if c.PortLabel == "" && s.PortLabel == "" {
				v.add("%s: the check has no port (set port on the check or its service)", cp)
			}
			if c.TaskName != "" && !tasks[c.TaskName] {
				v.add("%s: task %q does not exist in the group", cp, c.TaskName)
			}
			if r := c.CheckRestart; r != nil && r.Limit < 0 {
				v.add("%s: check_restart limit must not be negative", cp)
			}
		}
	}
	for _, s := range tg.Services {
		check(prefix, s)
	}
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		for _, s := range t.Services {
			check(fmt.Sprintf("%s, task %q", prefix, t.Name), s)
		}
	}
}
