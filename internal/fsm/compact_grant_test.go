package fsm

import (
	"reflect"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// equalGrants answers as reflect.DeepEqual for grants that differ in any
// one field, in nil against empty, or not at all; and the grant types
// have the fields its fast path knows of.
func TestEqualGrantsAsDeepEqual(t *testing.T) {
	fields := map[reflect.Type]int{
		reflect.TypeFor[structs.AllocatedResources]():       3,
		reflect.TypeFor[structs.AllocatedTaskResources]():   4,
		reflect.TypeFor[structs.AllocatedSharedResources](): 3,
		reflect.TypeFor[structs.AllocatedCpuResources]():    2,
		reflect.TypeFor[structs.AllocatedMemoryResources](): 2,
	}
	for typ, n := range fields {
		if typ.NumField() != n {
			t.Errorf("%s has %d fields, equalGrants knows %d: update its fast path", typ, typ.NumField(), n)
		}
	}
	base := func() *structs.AllocatedResources {
		return &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"web":  {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}},
			"side": {Cpu: structs.AllocatedCpuResources{CpuShares: 50}, Memory: structs.AllocatedMemoryResources{MemoryMB: 32, MemoryMaxMB: 64}},
		}, Shared: structs.AllocatedSharedResources{DiskMB: 300}}
	}
	variants := map[string]func(r *structs.AllocatedResources){
		"same":             func(r *structs.AllocatedResources) {},
		"disk":             func(r *structs.AllocatedResources) { r.Shared.DiskMB++ },
		"cpu":              func(r *structs.AllocatedResources) { r.Tasks["web"].Cpu.CpuShares++ },
		"memory":           func(r *structs.AllocatedResources) { r.Tasks["side"].Memory.MemoryMB++ },
		"memory max":       func(r *structs.AllocatedResources) { r.Tasks["side"].Memory.MemoryMaxMB = 0 },
		"task renamed":     func(r *structs.AllocatedResources) { r.Tasks["other"] = r.Tasks["web"]; delete(r.Tasks, "web") },
		"task dropped":     func(r *structs.AllocatedResources) { delete(r.Tasks, "side") },
		"task nil":         func(r *structs.AllocatedResources) { r.Tasks["side"] = nil },
		"tasks nil":        func(r *structs.AllocatedResources) { r.Tasks = nil },
		"tasks empty":      func(r *structs.AllocatedResources) { r.Tasks = map[string]*structs.AllocatedTaskResources{} },
		"lifecycles empty": func(r *structs.AllocatedResources) { r.TaskLifecycles = map[string]*structs.TaskLifecycle{} },
		"cores":            func(r *structs.AllocatedResources) { r.Tasks["web"].Cpu.ReservedCores = []uint16{1} },
		"cores empty":      func(r *structs.AllocatedResources) { r.Tasks["web"].Cpu.ReservedCores = []uint16{} },
		"task networks": func(r *structs.AllocatedResources) {
			r.Tasks["web"].Networks = []*structs.NetworkResource{{Mode: "host"}}
		},
		"devices empty": func(r *structs.AllocatedResources) { r.Tasks["web"].Devices = []*structs.AllocatedDeviceResource{} },
		"ports": func(r *structs.AllocatedResources) {
			r.Shared.Ports = structs.AllocatedPorts{{Label: "http", Value: 20000}}
		},
		"shared networks": func(r *structs.AllocatedResources) {
			r.Shared.Networks = []*structs.NetworkResource{{Mode: "host", IP: "10.0.0.1"}}
		},
	}
	for na, va := range variants {
		for nb, vb := range variants {
			a, b := base(), base()
			va(a)
			vb(b)
			if got, want := equalGrants(a, b), reflect.DeepEqual(a, b); got != want {
				t.Errorf("%s vs %s: equalGrants %v, reflect.DeepEqual %v", na, nb, got, want)
			}
		}
	}
	if !equalGrants(nil, nil) || equalGrants(base(), nil) || equalGrants(nil, base()) {
		t.Error("nil grants")
	}
}
