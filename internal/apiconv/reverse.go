package apiconv

import (
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// StructJobToApiJob converts an engine Job back to the wire type. Every
// scalar becomes a non-nil pointer, so the result equals a canonicalized
// api.Job with the same content.
func StructJobToApiJob(job *structs.Job) *api.Job {
	if job == nil {
		return nil
	}
	out := &api.Job{
		Region:                   ptr(job.Region),
		Namespace:                ptr(job.Namespace),
		ID:                       ptr(job.ID),
		Name:                     ptr(job.Name),
		Type:                     ptr(job.Type),
		Priority:                 ptr(job.Priority),
		AllAtOnce:                ptr(job.AllAtOnce),
		Datacenters:              job.Datacenters,
		NodePool:                 ptr(job.NodePool),
		Constraints:              job.Constraints,
		Affinities:               job.Affinities,
		Update:                   job.Update,
		Multiregion:              job.Multiregion,
		Spreads:                  job.Spreads,
		Periodic:                 job.Periodic,
		ParameterizedJob:         job.ParameterizedJob,
		Reschedule:               reschedToAPI(job.Reschedule),
		Migrate:                  job.Migrate,
		Meta:                     job.Meta,
		UI:                       job.UI,
		Stop:                     ptr(job.Stop),
		ParentID:                 ptr(job.ParentID),
		Dispatched:               job.Dispatched,
		DispatchIdempotencyToken: ptr(job.DispatchIdempotencyToken),
		Payload:                  job.Payload,
		ConsulNamespace:          ptr(job.ConsulNamespace),
		VaultNamespace:           ptr(job.VaultNamespace),
		NomadTokenID:             ptr(job.NomadTokenID),
		Status:                   ptr(job.Status),
		StatusDescription:        ptr(job.StatusDescription),
		Stable:                   ptr(job.Stable),
		Version:                  ptr(job.Version),
		SubmitTime:               ptr(job.SubmitTime),
		CreateIndex:              ptr(job.CreateIndex),
		ModifyIndex:              ptr(job.ModifyIndex),
		JobModifyIndex:           ptr(job.JobModifyIndex),
		VersionTag:               job.VersionTag,
	}
	if job.TaskGroups != nil {
		out.TaskGroups = make([]*api.TaskGroup, len(job.TaskGroups))
		for i, tg := range job.TaskGroups {
			out.TaskGroups[i] = groupToAPI(tg)
		}
	}
	return out
}

func groupToAPI(tg *structs.TaskGroup) *api.TaskGroup {
	if tg == nil {
		return nil
	}
	out := &api.TaskGroup{
		Name:                      ptr(tg.Name),
		Count:                     ptr(tg.Count),
		Constraints:               tg.Constraints,
		Affinities:                tg.Affinities,
		Spreads:                   tg.Spreads,
		Volumes:                   tg.Volumes,
		RestartPolicy:             restartToAPI(tg.RestartPolicy),
		Disconnect:                tg.Disconnect,
		ReschedulePolicy:          reschedToAPI(tg.ReschedulePolicy),
		EphemeralDisk:             diskToAPI(tg.EphemeralDisk),
		Update:                    tg.Update,
		Migrate:                   tg.Migrate,
		Networks:                  networksToAPI(tg.Networks),
		Meta:                      tg.Meta,
		Services:                  tg.Services,
		ShutdownDelay:             tg.ShutdownDelay,
		MaxRunDuration:            tg.MaxRunDuration,
		StopAfterClientDisconnect: tg.StopAfterClientDisconnect,
		MaxClientDisconnect:       tg.MaxClientDisconnect,
		Scaling:                   tg.Scaling,
		Consul:                    tg.Consul,
		PreventRescheduleOnLost:   ptr(tg.PreventRescheduleOnLost),
	}
	if tg.Tasks != nil {
		out.Tasks = make([]*api.Task, len(tg.Tasks))
		for i, t := range tg.Tasks {
			out.Tasks[i] = taskToAPI(t)
		}
	}
	return out
}

func taskToAPI(t *structs.Task) *api.Task {
	if t == nil {
		return nil
	}
	return &api.Task{
		Name:            t.Name,
		Driver:          t.Driver,
		User:            t.User,
		Lifecycle:       t.Lifecycle,
		Config:          t.Config,
		Constraints:     t.Constraints,
		Affinities:      t.Affinities,
		Env:             t.Env,
		Services:        t.Services,
		Resources:       ResourcesToAPI(t.Resources),
		RestartPolicy:   restartToAPI(t.RestartPolicy),
		Meta:            t.Meta,
		KillTimeout:     durPtr(t.KillTimeout),
		LogConfig:       logToAPI(t.LogConfig),
		Artifacts:       t.Artifacts,
		Vault:           t.Vault,
		Consul:          t.Consul,
		Templates:       t.Templates,
		DispatchPayload: t.DispatchPayload,
		VolumeMounts:    t.VolumeMounts,
		CSIPluginConfig: t.CSIPluginConfig,
		Leader:          t.Leader,
		ShutdownDelay:   t.ShutdownDelay,
		KillSignal:      t.KillSignal,
		Kind:            t.Kind,
		ScalingPolicies: t.ScalingPolicies,
		Secrets:         t.Secrets,
		Identity:        t.Identity,
		Identities:      t.Identities,
		Actions:         t.Actions,
		Schedule:        t.Schedule,
	}
}

// ResourcesToAPI converts a task's resource ask back to the wire type.
func ResourcesToAPI(r *structs.Resources) *api.Resources {
	if r == nil {
		return nil
	}
	return &api.Resources{
		CPU:         ptr(r.CPU),
		Cores:       ptr(r.Cores),
		MemoryMB:    ptr(r.MemoryMB),
		MemoryMaxMB: ptr(r.MemoryMaxMB),
		DiskMB:      ptr(r.DiskMB),
		IOPS:        ptr(r.IOPS),
		SecretsMB:   ptr(r.SecretsMB),
		Networks:    networksToAPI(r.Networks),
		Devices:     r.Devices,
		NUMA:        r.NUMA,
	}
}

func networksToAPI(ns []*structs.NetworkResource) []*api.NetworkResource {
	if ns == nil {
		return nil
	}
	out := make([]*api.NetworkResource, len(ns))
	for i, n := range ns {
		if n == nil {
			continue
		}
		out[i] = &api.NetworkResource{
			Mode:          n.Mode,
			Device:        n.Device,
			CIDR:          n.CIDR,
			IP:            n.IP,
			DNS:           n.DNS,
			ReservedPorts: portsToAPI(n.ReservedPorts),
			DynamicPorts:  portsToAPI(n.DynamicPorts),
			Hostname:      n.Hostname,
			MBits:         ptr(n.MBits),
			CNI:           n.CNI,
		}
	}
	return out
}

func portsToAPI(ps []structs.Port) []api.Port {
	if ps == nil {
		return nil
	}
	out := make([]api.Port, len(ps))
	for i, p := range ps {
		out[i] = api.Port{Label: p.Label, Value: p.Value, To: p.To,
			HostNetwork: p.HostNetwork, IgnoreCollision: p.IgnoreCollision}
	}
	return out
}

func restartToAPI(r *structs.RestartPolicy) *api.RestartPolicy {
	if r == nil {
		return nil
	}
	return &api.RestartPolicy{
		Interval:        durPtr(r.Interval),
		Attempts:        ptr(r.Attempts),
		Delay:           durPtr(r.Delay),
		Mode:            ptr(r.Mode),
		RenderTemplates: ptr(r.RenderTemplates),
	}
}

func reschedToAPI(r *structs.ReschedulePolicy) *api.ReschedulePolicy {
	if r == nil {
		return nil
	}
	return &api.ReschedulePolicy{
		Attempts:      ptr(r.Attempts),
		Interval:      durPtr(r.Interval),
		Delay:         durPtr(r.Delay),
		DelayFunction: ptr(r.DelayFunction),
		MaxDelay:      durPtr(r.MaxDelay),
		Unlimited:     ptr(r.Unlimited),
	}
}

func diskToAPI(d *structs.EphemeralDisk) *api.EphemeralDisk {
	if d == nil {
		return nil
	}
	return &api.EphemeralDisk{Sticky: ptr(d.Sticky), Migrate: ptr(d.Migrate), SizeMB: ptr(d.SizeMB)}
}

func logToAPI(l *structs.LogConfig) *api.LogConfig {
	if l == nil {
		return nil
	}
	return &api.LogConfig{MaxFiles: ptr(l.MaxFiles), MaxFileSizeMB: ptr(l.MaxFileSizeMB), Disabled: ptr(l.Disabled)}
}
