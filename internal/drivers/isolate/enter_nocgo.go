//go:build !cgo

package isolate

// enterInC: without cgo, alloc exec goes through util-linux's nsenter,
// which cannot apply the task's capability set.
const enterInC = false
