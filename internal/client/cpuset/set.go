package cpuset

import (
	"slices"
	"strconv"
	"strings"

	"github.com/drover-project/drover/internal/structs"
)

// Set is a set of CPU IDs, kept sorted and without duplicates. The zero
// value is the empty set. A Set is never modified in place.
type Set struct {
	ids []uint16
}

// New returns the set of ids.
func New(ids ...uint16) Set {
	out := slices.Clone(ids)
	slices.Sort(out)
	return Set{ids: slices.Compact(out)}
}

// Parse reads a cpuset list such as "0-3,6".
func Parse(s string) (Set, error) {
	ids, err := structs.ParseCores(s)
	if err != nil {
		return Set{}, err
	}
	return Set{ids: ids}, nil
}

// IDs returns the set's CPU IDs in order (a copy).
func (s Set) IDs() []uint16 { return slices.Clone(s.ids) }

// Len is the number of CPUs in the set.
func (s Set) Len() int { return len(s.ids) }

// Empty reports whether the set has no CPU.
func (s Set) Empty() bool { return len(s.ids) == 0 }

// Contains reports whether id is in the set.
func (s Set) Contains(id uint16) bool {
	_, ok := slices.BinarySearch(s.ids, id)
	return ok
}

// Equal reports whether both sets hold the same CPUs.
func (s Set) Equal(o Set) bool { return slices.Equal(s.ids, o.ids) }

// Union is every CPU in s or o.
func (s Set) Union(o Set) Set {
	return New(append(slices.Clone(s.ids), o.ids...)...)
}

// Difference is every CPU in s and not in o.
func (s Set) Difference(o Set) Set {
	var out []uint16
	for _, id := range s.ids {
		if !o.Contains(id) {
			out = append(out, id)
		}
	}
	return Set{ids: out}
}

// String is the kernel's list format ("0-2,5"), as cpuset.cpus and
// Docker's CpusetCpus take it; "" for the empty set.
func (s Set) String() string {
	var b strings.Builder
	for i := 0; i < len(s.ids); {
		j := i
		for j+1 < len(s.ids) && s.ids[j+1] == s.ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(s.ids[i])))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(s.ids[j])))
		}
		i = j + 1
	}
	return b.String()
}
