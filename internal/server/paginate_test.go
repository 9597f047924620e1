package server

import (
	"reflect"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func TestPaginate(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e"}
	id := func(s string) string { return s }
	cases := []struct {
		per   int32
		token string
		page  []string
		next  string
	}{
		{0, "", items, ""},
		{2, "", []string{"a", "b"}, "c"},
		{2, "c", []string{"c", "d"}, "e"},
		{2, "e", []string{"e"}, ""},
		{5, "", items, ""},
		{2, "zz", []string{}, ""},
	}
	for _, c := range cases {
		page, next := paginate(items, &structs.QueryOptions{PerPage: c.per, NextToken: c.token}, id)
		if !reflect.DeepEqual(page, c.page) || next != c.next {
			t.Errorf("per=%d token=%q: got %v %q, want %v %q", c.per, c.token, page, next, c.page, c.next)
		}
	}
}
