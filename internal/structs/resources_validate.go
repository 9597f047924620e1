package structs

import "fmt"

// Upper bounds of what one task (or group, for disk) may ask for: above
// any node that exists, far below where the scheduler's and the plan
// applier's int64 sums could wrap. A value past them is a typo or an
// attack, never a real ask.
const (
	MaxTaskCPU      = 10_000_000      // MHz: 2,500 cores at 4 GHz
	MaxTaskMemoryMB = 64 << 20        // MB: 64 TiB
	MaxDiskMB       = 1 << 30         // MB: 1 PiB
	MaxTaskCores    = 16_384          // reserved cores
	MaxDeviceCount  = 65_536          // instances of one device ask
	MaxTaskMBits    = 100_000_000     // Mbit/s (legacy network ask)
	maxTaskSmallMB  = MaxTaskMemoryMB // secrets tmpfs
)

// validateResourceRanges refuses resource asks outside what any node could
// grant: negative values and values above the bounds above, for every task
// of every group and every group's ephemeral disk. (Job.Validate's task
// checks keep the lower bounds Nomad states: cpu at least 1 MHz, memory at
// least 10 MB.)
func (j *Job) validateResourceRanges(v *ValidationError) {
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		prefix := fmt.Sprintf("Task group %q", tg.Name)
		if d := tg.EphemeralDisk; d != nil && d.SizeMB > MaxDiskMB {
			v.add("%s: EphemeralDisk.SizeMB %d exceeds the maximum %d MB (1 PiB)", prefix, d.SizeMB, MaxDiskMB)
		}
		for _, n := range tg.Networks {
			if n != nil && (n.MBits < 0 || n.MBits > MaxTaskMBits) {
				v.add("%s: Networks: MBits must be between 0 and %d (got %d)", prefix, MaxTaskMBits, n.MBits)
			}
		}
		for _, t := range tg.Tasks {
			if t == nil || t.Resources == nil {
				continue
			}
			validateTaskResources(fmt.Sprintf("%s, task %q", prefix, t.Name), t.Resources, v)
		}
	}
}

func validateTaskResources(tp string, r *Resources, v *ValidationError) {
	if r.CPU > MaxTaskCPU {
		v.add("%s: Resources.CPU %d exceeds the maximum %d MHz", tp, r.CPU, MaxTaskCPU)
	} else if r.CPU < 0 && r.Cores != 0 {
		v.add("%s: Resources.CPU must not be negative (got %d)", tp, r.CPU)
	}
	if r.Cores > 0 && r.CPU > 0 {
		v.add("%s: Task can only ask for 'cpu' or 'cores' resource, not both (cpu = %d, cores = %d)", tp, r.CPU, r.Cores)
	}
	if r.Cores < 0 {
		v.add("%s: Resources.Cores must not be negative (got %d)", tp, r.Cores)
	} else if r.Cores > MaxTaskCores {
		v.add("%s: Resources.Cores %d exceeds the maximum %d", tp, r.Cores, MaxTaskCores)
	}
	if r.MemoryMB > MaxTaskMemoryMB {
		v.add("%s: Resources.MemoryMB %d exceeds the maximum %d MB (64 TiB)", tp, r.MemoryMB, MaxTaskMemoryMB)
	}
	if r.MemoryMaxMB < 0 {
		v.add("%s: Resources.MemoryMaxMB must not be negative (got %d)", tp, r.MemoryMaxMB)
	} else if r.MemoryMaxMB > MaxTaskMemoryMB {
		v.add("%s: Resources.MemoryMaxMB %d exceeds the maximum %d MB (64 TiB)", tp, r.MemoryMaxMB, MaxTaskMemoryMB)
	}
	if r.DiskMB < 0 {
		v.add("%s: Resources.DiskMB must not be negative (got %d)", tp, r.DiskMB)
	} else if r.DiskMB > MaxDiskMB {
		v.add("%s: Resources.DiskMB %d exceeds the maximum %d MB (1 PiB)", tp, r.DiskMB, MaxDiskMB)
	}
	if r.IOPS < 0 {
		v.add("%s: Resources.IOPS must not be negative (got %d)", tp, r.IOPS)
	}
	if r.SecretsMB < 0 || r.SecretsMB > maxTaskSmallMB {
		v.add("%s: Resources.SecretsMB must be between 0 and %d MB (got %d)", tp, maxTaskSmallMB, r.SecretsMB)
	}
	for i, n := range r.Networks {
		if n != nil && (n.MBits < 0 || n.MBits > MaxTaskMBits) {
			v.add("%s: Resources.Networks[%d]: MBits must be between 0 and %d (got %d)", tp, i, MaxTaskMBits, n.MBits)
		}
	}
	for i, d := range r.Devices {
		if d != nil && d.Count != nil && *d.Count > MaxDeviceCount {
			v.add("%s: Resources.Devices[%d] (%q): Count %d exceeds the maximum %d", tp, i, d.Name, *d.Count, MaxDeviceCount)
		}
	}
}
