package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// stringField indexes one string field of the objects of one table, with
// the keys memdb.StringFieldIndex makes (the value NUL-terminated; an empty
// value is missing) but read through a typed accessor: StringFieldIndex
// finds the field by name through reflection on every write and lookup,
// which cost a few per cent of the server's CPU on the alloc, eval and
// node tables.
type stringField[T any] struct {
	name string // for errors
	get  func(*T) string
}

func field[T any](name string, get func(*T) string) *stringField[T] {
	return &stringField[T]{name: name, get: get}
}

// FromObject implements memdb.SingleIndexer.
func (f *stringField[T]) FromObject(obj any) (bool, []byte, error) {
	t, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("state: %s index on %T", f.name, obj)
	}
	v := f.get(t)
	if v == "" {
		return false, nil, nil
	}
	key := make([]byte, len(v)+1)
	copy(key, v)
	return true, key, nil
}

// FromArgs implements memdb.Indexer.
func (f *stringField[T]) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("state: %s index takes one argument", f.name)
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("state: %s index argument must be a string: %#v", f.name, args[0])
	}
	key := make([]byte, len(s)+1)
	copy(key, s)
	return key, nil
}

// PrefixFromArgs implements memdb.PrefixIndexer: the argument without the
// terminating NUL.
func (f *stringField[T]) PrefixFromArgs(args ...any) ([]byte, error) {
	key, err := f.FromArgs(args...)
	if err != nil {
		return nil, err
	}
	return key[:len(key)-1], nil
}

var (
	_ memdb.SingleIndexer = (*stringField[IndexEntry])(nil)
	_ memdb.PrefixIndexer = (*stringField[IndexEntry])(nil)
)
