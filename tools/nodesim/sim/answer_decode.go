package sim

// Hand-written decoders of the answers nodesim decodes most: every pull's
// (pullAnswer) and every fetch's (allocsAnswer). They give the values
// go-msgpack's reflection decoder gives for the lean types of wire.go, from
// the same bytes, but skip what nodesim does not read (each allocation's
// encoded job but for its type, modify index and group and task names) with
// mpReader.skip instead of decoding it field by field. clientCodec uses them
// for these answers; any other answer, or these decoded by go-msgpack (as in
// the tests), still works through wire.go's types.
//
// As go-msgpack does, struct fields are matched by exact name, unknown ones
// skipped, nil leaves a value zero, an empty array or map gives an empty
// non-nil one, and a nil array element a nil pointer. Structs are expected
// as maps (the servers' handle never encodes them as arrays).

// leanAnswer is an answer clientCodec decodes with an mpReader.
type leanAnswer interface {
	decodeMsgpack(r *mpReader)
}

func (a *allocsAnswer) decodeMsgpack(r *mpReader) {
	r.fields(func(key []byte) bool {
		switch string(key) {
		case "Allocs":
			a.Allocs = decodeArray(r, decodeAlloc)
		case "Index":
			a.Index = r.readUint()
		default:
			return false
		}
		return true
	})
}

func (a *pullAnswer) decodeMsgpack(r *mpReader) {
	r.fields(func(key []byte) bool {
		switch string(key) {
		case "Allocs":
			a.Allocs = decodeModifyIndexes(r)
		case "Changed":
			a.Changed = decodeArray(r, decodeAlloc)
		case "Index":
			a.Index = r.readUint()
		default:
			return false
		}
		return true
	})
}

// fields reads a map of struct fields: field reads the value of a field
// it knows and returns true; the others (and keys that are not strings)
// are skipped. False when the value is nil.
func (r *mpReader) fields(field func(key []byte) bool) bool {
	n := r.readMapLen()
	if n < 0 {
		return false
	}
	for i := 0; i < n && r.ok(); i++ {
		if key, ok := r.readKey(); !ok || !field(key) {
			r.skip()
		}
	}
	return true
}

// decodeArray reads an array of elem's values; nil for nil.
func decodeArray[T any](r *mpReader, elem func(*mpReader) T) []T {
	n := r.readArrayLen()
	if n < 0 {
		return nil
	}
	out := make([]T, 0, min(n, 1<<12)) // a corrupt length must not allocate
	for i := 0; i < n && r.ok(); i++ {
		out = append(out, elem(r))
	}
	return out
}

// decodeModifyIndexes decodes a pull's alloc ID → AllocModifyIndex map.
func decodeModifyIndexes(r *mpReader) map[string]uint64 {
	n := r.readMapLen()
	if n < 0 {
		return nil
	}
	m := make(map[string]uint64, min(n, 1<<12)) // a corrupt length must not allocate
	for i := 0; i < n && r.ok(); i++ {
		id := r.readString()
		m[id] = r.readUint()
	}
	return m
}

func decodeAlloc(r *mpReader) *wireAlloc {
	a := &wireAlloc{}
	if !r.fields(func(key []byte) bool {
		switch string(key) {
		case "ID":
			a.ID = r.readString()
		case "Namespace":
			a.Namespace = r.readShared()
		case "JobID":
			a.JobID = r.readShared()
		case "TaskGroup":
			a.TaskGroup = r.readShared()
		case "DesiredStatus":
			a.DesiredStatus = r.readShared()
		case "ClientStatus":
			a.ClientStatus = r.readShared()
		case "AllocModifyIndex":
			a.AllocModifyIndex = r.readUint()
		case "DeploymentID":
			a.DeploymentID = r.readShared()
		case "Job":
			a.Job = decodeJob(r)
		default:
			return false
		}
		return true
	}) {
		return nil
	}
	return a
}

func decodeJob(r *mpReader) *wireJob {
	j := &wireJob{}
	if !r.fields(func(key []byte) bool {
		switch string(key) {
		case "Type":
			j.Type = r.readShared()
		case "JobModifyIndex":
			j.JobModifyIndex = r.readUint()
		case "TaskGroups":
			j.TaskGroups = decodeArray(r, decodeGroup)
		default:
			return false
		}
		return true
	}) {
		return nil
	}
	return j
}

func decodeGroup(r *mpReader) *wireGroup {
	g := &wireGroup{}
	if !r.fields(func(key []byte) bool {
		switch string(key) {
		case "Name":
			g.Name = r.readShared()
		case "Tasks":
			g.Tasks = decodeArray(r, decodeTask)
		default:
			return false
		}
		return true
	}) {
		return nil
	}
	return g
}

func decodeTask(r *mpReader) *wireTask {
	t := &wireTask{}
	if !r.fields(func(key []byte) bool {
		if string(key) != "Name" {
			return false
		}
		t.Name = r.readShared()
		return true
	}) {
		return nil
	}
	return t
}
