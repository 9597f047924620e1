package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// compoundKey indexes the objects of one table by a few string fields and,
// optionally, a final condition. Its keys are those of a memdb.CompoundIndex
// of stringField sub-indexes and a ConditionalIndex: each field's value
// NUL-terminated, then the condition as one byte (0 or 1); an object with
// an empty field is missing from the index. Reads (FromArgs,
// PrefixFromArgs) are the embedded CompoundIndex's own, so lookup keys
// are built exactly as before.
//
// It exists for its FromObject, which every insert and delete calls for
// the new and the replaced object: it builds the key in one allocation.
// CompoundIndex made one per field, one or two to join them, and memdb,
// which appends the primary key to every value of a non-unique index,
// one more to grow the joined key; a compoundKey of a non-unique index
// knows the table's primary key and leaves room for it. For the allocs
// table's node_terminal and job indexes that was eight of the allocations
// of a placement, and sixteen of a client status update (which also
// computes the replaced object's keys).
type compoundKey[T any] struct {
	*memdb.CompoundIndex
	name    string
	fields  []*stringField[T]
	cond    func(*T) bool   // nil: no condition
	primary func(*T) string // nil for a unique index
}

// newCompoundKey returns the index of fields, then cond unless nil. For a
// non-unique index primary returns the object's primary key (the table's
// "id" index value without its NUL).
func newCompoundKey[T any](name string, primary func(*T) string, cond func(*T) bool, fields ...*stringField[T]) *compoundKey[T] {
	subs := make([]memdb.Indexer, 0, len(fields)+1)
	for _, f := range fields {
		subs = append(subs, f)
	}
	if cond != nil {
		subs = append(subs, &memdb.ConditionalIndex{Conditional: func(obj any) (bool, error) {
			t, ok := obj.(*T)
			if !ok {
				return false, fmt.Errorf("state: %s index on %T", name, obj)
			}
			return cond(t), nil
		}})
	}
	return &compoundKey[T]{CompoundIndex: &memdb.CompoundIndex{Indexes: subs}, name: name, fields: fields,
		cond: cond, primary: primary}
}

// FromObject implements memdb.SingleIndexer.
func (k *compoundKey[T]) FromObject(obj any) (bool, []byte, error) {
	t, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("state: %s index on %T", k.name, obj)
	}
	n := 0
	for _, f := range k.fields {
		v := f.get(t)
		if v == "" {
			return false, nil, nil
		}
		n += len(v) + 1
	}
	if k.cond != nil {
		n++
	}
	if k.primary != nil {
		n += len(k.primary(t)) + 1
	}
	key := make([]byte, 0, n)
	for _, f := range k.fields {
		key = append(key, f.get(t)...)
		key = append(key, 0)
	}
	if k.cond != nil {
		b := byte(0)
		if k.cond(t) {
			b = 1
		}
		key = append(key, b)
	}
	return true, key, nil
}

var (
	_ memdb.SingleIndexer = (*compoundKey[IndexEntry])(nil)
	_ memdb.PrefixIndexer = (*compoundKey[IndexEntry])(nil)
)
