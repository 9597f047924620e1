package fsm

import (
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	"github.com/drover-project/drover/internal/structs"
)

// Registered and restored nodes keep every value; what nodes have in common
// (attribute keys and values, driver names) is one copy, while unique.*
// values stay each node's own.
func TestNodeRegisterSharesCommonStrings(t *testing.T) {
	f := newFSM(t, nil)
	spec := func(id, ip string) *structs.Node {
		n := testNode(id)
		n.Attributes = map[string]string{"kernel.name": "linux", "cpu.arch": "amd64", "unique.network.ip-address": ip}
		n.Meta = map[string]string{"rack": "r1"}
		n.Drivers = map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true, HealthDescription: "Healthy"}}
		return n
	}
	want := map[string]*structs.Node{"n1": spec("n1", "10.0.0.1"), "n2": spec("n2", "10.0.0.2")}
	apply(t, f, entry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: spec("n1", "10.0.0.1")}))
	// Sharing outlasts a collection between the registrations.
	runtime.GC()
	runtime.GC()
	apply(t, f, entry(t, 2, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: spec("n2", "10.0.0.2")}))

	check := func(f *FSM, when string) {
		t.Helper()
		n1, _ := f.State().NodeByID(nil, "n1")
		n2, _ := f.State().NodeByID(nil, "n2")
		for id, n := range map[string]*structs.Node{"n1": n1, "n2": n2} {
			w := *want[id]
			w.CreateIndex, w.ModifyIndex, w.Events, w.StatusUpdatedAt = n.CreateIndex, n.ModifyIndex, n.Events, n.StatusUpdatedAt
			if !reflect.DeepEqual(n.Attributes, w.Attributes) || !reflect.DeepEqual(n.Meta, w.Meta) ||
				!reflect.DeepEqual(n.Drivers, w.Drivers) || n.Datacenter != w.Datacenter {
				t.Fatalf("%s: %s changed:\n%+v\nwant\n%+v", when, id, n, w)
			}
		}
		if unsafe.StringData(n1.Attributes["kernel.name"]) != unsafe.StringData(n2.Attributes["kernel.name"]) ||
			unsafe.StringData(n1.Meta["rack"]) != unsafe.StringData(n2.Meta["rack"]) ||
			unsafe.StringData(n1.Drivers["raw_exec"].HealthDescription) != unsafe.StringData(n2.Drivers["raw_exec"].HealthDescription) {
			t.Errorf("%s: common strings are not shared", when)
		}
		var k1, k2 string
		for k := range n1.Attributes {
			if k == "cpu.arch" {
				k1 = k
			}
		}
		for k := range n2.Attributes {
			if k == "cpu.arch" {
				k2 = k
			}
		}
		if unsafe.StringData(k1) != unsafe.StringData(k2) {
			t.Errorf("%s: attribute keys are not shared", when)
		}
	}
	check(f, "registered")

	restored := snapshotRestored(t, f)
	check(restored, "restored")
}
