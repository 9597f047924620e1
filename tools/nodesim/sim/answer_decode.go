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
	n := r.readMapLen()
	for i := 0; i < n && r.ok(); i++ {
		key, ok := r.readKey()
		if !ok {
			r.skip()
			continue
		}
		switch string(key) {
		case "Allocs":
			a.Allocs = decodeAllocs(r)
		case "Index":
			a.Index = r.readUint()
		default:
			r.skip()
		}
	}
}

func (a *pullAnswer) decodeMsgpack(r *mpReader) {
	n := r.readMapLen()
	for i := 0; i < n && r.ok(); i++ {
		key, ok := r.readKey()
		if !ok {
			r.skip()
			continue
		}
		switch string(key) {
		case "Allocs":
			a.Allocs = decodeModifyIndexes(r)
		case "Changed":
			a.Changed = decodeAllocs(r)
		case "Index":
			a.Index = r.readUint()
		default:
			r.skip()
		}
	}
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

func decodeAllocs(r *mpReader) []*wireAlloc {
	n := r.readArrayLen()
	if n < 0 {
		return nil
	}
	allocs := make([]*wireAlloc, 0, min(n, 1<<12))
	for i := 0; i < n && r.ok(); i++ {
		allocs = append(allocs, decodeAlloc(r))
	}
	return allocs
}

func decodeAlloc(r *mpReader) *wireAlloc {
	n := r.readMapLen()
	if n < 0 {
		return nil
	}
	a := &wireAlloc{}
	for i := 0; i < n && r.ok(); i++ {
		key, ok := r.readKey()
		if !ok {
			r.skip()
			continue
		}
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
		case "Job":
			a.Job = decodeJob(r)
		default:
			r.skip()
		}
	}
	return a
}

func decodeJob(r *mpReader) *wireJob {
	n := r.readMapLen()
	if n < 0 {
		return nil
	}
	j := &wireJob{}
	for i := 0; i < n && r.ok(); i++ {
		key, ok := r.readKey()
		if !ok {
			r.skip()
			continue
		}
		switch string(key) {
		case "Type":
			j.Type = r.readShared()
		case "JobModifyIndex":
			j.JobModifyIndex = r.readUint()
		case "TaskGroups":
			j.TaskGroups = decodeGroups(r)
		default:
			r.skip()
		}
	}
	return j
}

func decodeGroups(r *mpReader) []*wireGroup {
	n := r.readArrayLen()
	if n < 0 {
		return nil
	}
	groups := make([]*wireGroup, 0, min(n, 1<<12))
	for i := 0; i < n && r.ok(); i++ {
		groups = append(groups, decodeGroup(r))
	}
	return groups
}

func decodeGroup(r *mpReader) *wireGroup {
	n := r.readMapLen()
	if n < 0 {
		return nil
	}
	g := &wireGroup{}
	for i := 0; i < n && r.ok(); i++ {
		key, ok := r.readKey()
		if !ok {
			r.skip()
			continue
		}
		switch string(key) {
		case "Name":
			g.Name = r.readShared()
		case "Tasks":
			g.Tasks = decodeTasks(r)
		default:
			r.skip()
		}
	}
	return g
}

func decodeTasks(r *mpReader) []*wireTask {
	n := r.readArrayLen()
	if n < 0 {
		return nil
	}
	tasks := make([]*wireTask, 0, min(n, 1<<12))
	for i := 0; i < n && r.ok(); i++ {
		tasks = append(tasks, decodeTask(r))
	}
	return tasks
}

func decodeTask(r *mpReader) *wireTask {
	n := r.readMapLen()
	if n < 0 {
		return nil
	}
	t := &wireTask{}
	for i := 0; i < n && r.ok(); i++ {
		key, ok := r.readKey()
		if !ok {
			r.skip()
			continue
		}
		if string(key) == "Name" {
			t.Name = r.readShared()
		} else {
			r.skip()
		}
	}
	return t
}
