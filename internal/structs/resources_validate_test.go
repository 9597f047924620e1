package structs

import (
	"math"
	"strings"
	"testing"
)

// Every resource field out of range is refused with an error naming the
// task and the field; the bounds themselves are accepted.
func TestValidateResourceRanges(t *testing.T) {
	res := func(j *Job) *Resources { return j.TaskGroups[0].Tasks[0].Resources }
	u64 := func(n uint64) *uint64 { return &n }
	cases := []struct {
		name string
		mut  func(j *Job)
		want string // "" = valid
	}{
		{"memory int64 max", func(j *Job) { res(j).MemoryMB = math.MaxInt64 },
			`Task group "g", task "t": Resources.MemoryMB 9223372036854775807 exceeds the maximum 67108864 MB`},
		{"cpu int64 max", func(j *Job) { res(j).CPU = math.MaxInt64 },
			`Task group "g", task "t": Resources.CPU 9223372036854775807 exceeds the maximum 10000000 MHz`},
		{"memory max int64 max", func(j *Job) { res(j).MemoryMaxMB = math.MaxInt64 }, "Resources.MemoryMaxMB 9223372036854775807 exceeds"},
		{"memory max negative", func(j *Job) { res(j).MemoryMaxMB = -1 }, "Resources.MemoryMaxMB must not be negative"},
		{"cores negative", func(j *Job) { res(j).Cores = -1 }, `task "t": Resources.Cores must not be negative (got -1)`},
		{"cores huge", func(j *Job) { res(j).Cores = 100000 }, "Resources.Cores 100000 exceeds the maximum 16384"},
		{"cpu and cores", func(j *Job) { res(j).Cores = 1; res(j).CPU = 500 }, `task "t": Task can only ask for 'cpu' or 'cores' resource, not both`},
		{"disk negative", func(j *Job) { res(j).DiskMB = -10 }, `task "t": Resources.DiskMB must not be negative (got -10)`},
		{"disk huge", func(j *Job) { res(j).DiskMB = math.MaxInt64 }, "Resources.DiskMB 9223372036854775807 exceeds"},
		{"ephemeral disk huge", func(j *Job) { j.TaskGroups[0].EphemeralDisk.SizeMB = math.MaxInt64 },
			`Task group "g": EphemeralDisk.SizeMB 9223372036854775807 exceeds the maximum`},
		{"iops negative", func(j *Job) { res(j).IOPS = -1 }, "Resources.IOPS must not be negative"},
		{"secrets negative", func(j *Job) { res(j).SecretsMB = -1 }, "Resources.SecretsMB must be between 0"},
		{"mbits negative", func(j *Job) { res(j).Networks = []*NetworkResource{{MBits: -1}} }, "Resources.Networks[0]: MBits"},
		{"device count huge", func(j *Job) { res(j).Devices = []*RequestedDevice{{Name: "nvidia/gpu", Count: u64(math.MaxUint64)}} },
			`Resources.Devices[0] ("nvidia/gpu"): Count 18446744073709551615 exceeds the maximum 65536`},
		{"at the bounds", func(j *Job) {
			r := res(j)
			r.CPU, r.MemoryMB, r.MemoryMaxMB, r.DiskMB = MaxTaskCPU, MaxTaskMemoryMB, MaxTaskMemoryMB, MaxDiskMB
			j.TaskGroups[0].EphemeralDisk.SizeMB = MaxDiskMB
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := validJob()
			c.mut(j)
			err := j.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want error containing %q, got %v", c.want, err)
			}
		})
	}
}
