package apiconv

import (
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// ApiJobToStructJob canonicalizes job (filling Nomad's defaults in place) and
// converts it to the engine's Job. A nil job converts to nil.
func ApiJobToStructJob(job *api.Job) *structs.Job {
	if job == nil {
		return nil
	}
	job.Canonicalize()
	out := &structs.Job{
		Region:                   val(job.Region),
		Namespace:                val(job.Namespace),
		ID:                       val(job.ID),
		ParentID:                 val(job.ParentID),
		Name:                     val(job.Name),
		Type:                     val(job.Type),
		Priority:                 val(job.Priority),
		AllAtOnce:                val(job.AllAtOnce),
		Datacenters:              job.Datacenters,
		NodePool:                 val(job.NodePool),
		Constraints:              job.Constraints,
		Affinities:               job.Affinities,
		Spreads:                  job.Spreads,
		Update:                   job.Update,
		Multiregion:              job.Multiregion,
		Periodic:                 job.Periodic,
		ParameterizedJob:         job.ParameterizedJob,
		Reschedule:               reschedToStruct(job.Reschedule),
		Migrate:                  job.Migrate,
		Dispatched:               job.Dispatched,
		DispatchIdempotencyToken: val(job.DispatchIdempotencyToken),
		Payload:                  job.Payload,
		Meta:                     job.Meta,
		UI:                       job.UI,
		ConsulNamespace:          val(job.ConsulNamespace),
		VaultNamespace:           val(job.VaultNamespace),
		NomadTokenID:             val(job.NomadTokenID),
		Stop:                     val(job.Stop),
		Status:                   val(job.Status),
		StatusDescription:        val(job.StatusDescription),
		Stable:                   val(job.Stable),
		Version:                  val(job.Version),
		VersionTag:               job.VersionTag,
		SubmitTime:               val(job.SubmitTime),
		CreateIndex:              val(job.CreateIndex),
		ModifyIndex:              val(job.ModifyIndex),
		JobModifyIndex:           val(job.JobModifyIndex),
	}
	if job.TaskGroups != nil {
		out.TaskGroups = make([]*structs.TaskGroup, len(job.TaskGroups))
		for i, tg := range job.TaskGroups {
			out.TaskGroups[i] = groupToStruct(tg)
		}
	}
	return out
}

func groupToStruct(tg *api.TaskGroup) *structs.TaskGroup {
	if tg == nil {
		return nil
	}
	out := &structs.TaskGroup{
		Name:                      val(tg.Name),
		Count:                     val(tg.Count),
		Constraints:               tg.Constraints,
		Affinities:                tg.Affinities,
		Spreads:                   tg.Spreads,
		Volumes:                   tg.Volumes,
		RestartPolicy:             restartToStruct(tg.RestartPolicy),
		Disconnect:                tg.Disconnect,
		ReschedulePolicy:          reschedToStruct(tg.ReschedulePolicy),
		EphemeralDisk:             diskToStruct(tg.EphemeralDisk),
		Update:                    tg.Update,
		Migrate:                   tg.Migrate,
		Networks:                  networksToStruct(tg.Networks),
		Meta:                      tg.Meta,
		Services:                  tg.Services,
		ShutdownDelay:             tg.ShutdownDelay,
		MaxRunDuration:            tg.MaxRunDuration,
		Scaling:                   tg.Scaling,
		Consul:                    tg.Consul,
		StopAfterClientDisconnect: tg.StopAfterClientDisconnect,
		MaxClientDisconnect:       tg.MaxClientDisconnect,
		PreventRescheduleOnLost:   val(tg.PreventRescheduleOnLost),
	}
	if tg.Tasks != nil {
		out.Tasks = make([]*structs.Task, len(tg.Tasks))
		for i, t := range tg.Tasks {
			out.Tasks[i] = taskToStruct(t)
		}
	}
	return out
}

func taskToStruct(t *api.Task) *structs.Task {
	if t == nil {
		return nil
	}
	return &structs.Task{
		Name:            t.Name,
		Driver:          t.Driver,
		User:            t.User,
		Lifecycle:       t.Lifecycle,
		Config:          t.Config,
		Constraints:     t.Constraints,
		Affinities:      t.Affinities,
		Env:             t.Env,
		Services:        t.Services,
		Resources:       ResourcesToStruct(t.Resources),
		RestartPolicy:   restartToStruct(t.RestartPolicy),
		Meta:            t.Meta,
		KillTimeout:     val(t.KillTimeout),
		LogConfig:       logToStruct(t.LogConfig),
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

// ResourcesToStruct converts a task's resource ask.
func ResourcesToStruct(r *api.Resources) *structs.Resources {
	if r == nil {
		return nil
	}
	return &structs.Resources{
		CPU:         val(r.CPU),
		Cores:       val(r.Cores),
		MemoryMB:    val(r.MemoryMB),
		MemoryMaxMB: val(r.MemoryMaxMB),
		DiskMB:      val(r.DiskMB),
		IOPS:        val(r.IOPS),
		SecretsMB:   val(r.SecretsMB),
		Networks:    networksToStruct(r.Networks),
		Devices:     r.Devices,
		NUMA:        r.NUMA,
	}
}

func networksToStruct(ns []*api.NetworkResource) []*structs.NetworkResource {
	if ns == nil {
		return nil
	}
	out := make([]*structs.NetworkResource, len(ns))
	for i, n := range ns {
		if n == nil {
			continue
		}
		out[i] = &structs.NetworkResource{
			Mode:          n.Mode,
			Device:        n.Device,
			CIDR:          n.CIDR,
			IP:            n.IP,
			Hostname:      n.Hostname,
			MBits:         val(n.MBits),
			DNS:           n.DNS,
			CNI:           n.CNI,
			ReservedPorts: portsToStruct(n.ReservedPorts),
			DynamicPorts:  portsToStruct(n.DynamicPorts),
		}
	}
	return out
}

func portsToStruct(ps []api.Port) []structs.Port {
	if ps == nil {
		return nil
	}
	out := make([]structs.Port, len(ps))
	for i, p := range ps {
		out[i] = structs.Port{Label: p.Label, Value: p.Value, To: p.To,
			HostNetwork: p.HostNetwork, IgnoreCollision: p.IgnoreCollision}
	}
	return out
}

func restartToStruct(r *api.RestartPolicy) *structs.RestartPolicy {
	if r == nil {
		return nil
	}
	return &structs.RestartPolicy{
		Attempts:        val(r.Attempts),
		Interval:        val(r.Interval),
		Delay:           val(r.Delay),
		Mode:            val(r.Mode),
		RenderTemplates: val(r.RenderTemplates),
	}
}

func reschedToStruct(r *api.ReschedulePolicy) *structs.ReschedulePolicy {
	if r == nil {
		return nil
	}
	return &structs.ReschedulePolicy{
		Attempts:      val(r.Attempts),
		Interval:      val(r.Interval),
		Delay:         val(r.Delay),
		DelayFunction: val(r.DelayFunction),
		MaxDelay:      val(r.MaxDelay),
		Unlimited:     val(r.Unlimited),
	}
}

func diskToStruct(d *api.EphemeralDisk) *structs.EphemeralDisk {
	if d == nil {
		return nil
	}
	return &structs.EphemeralDisk{Sticky: val(d.Sticky), SizeMB: val(d.SizeMB), Migrate: val(d.Migrate)}
}

func logToStruct(l *api.LogConfig) *structs.LogConfig {
	if l == nil {
		return nil
	}
	disabled := val(l.Disabled)
	// COMPAT: jobs written before Nomad 1.5.4 say enabled=false instead.
	if l.Enabled != nil && !*l.Enabled {
		disabled = true
	}
	return &structs.LogConfig{MaxFiles: val(l.MaxFiles), MaxFileSizeMB: val(l.MaxFileSizeMB), Disabled: disabled}
}

// val dereferences p, giving the zero value for nil.
func val[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// durPtr is ptr for durations, kept explicit for readability at call sites.
func durPtr(d time.Duration) *time.Duration { return &d }
