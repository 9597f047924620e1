package server

import (
	"errors"
	"reflect"
	"strings"
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
		page, next, _ := paginate(items, &structs.QueryOptions{PerPage: c.per, NextToken: c.token}, id, nil)
		if !reflect.DeepEqual(page, c.page) || next != c.next {
			t.Errorf("per=%d token=%q: got %v %q, want %v %q", c.per, c.token, page, next, c.page, c.next)
		}
	}
}

func TestPaginateKeep(t *testing.T) {
	items := []string{"a", "B", "c", "D", "e", "f"}
	id := func(s string) string { return s }
	lower := func(s string) (bool, error) { return s == strings.ToLower(s), nil }
	cases := []struct {
		per   int32
		token string
		page  []string
		next  string
	}{
		{0, "", []string{"a", "c", "e", "f"}, ""},
		{2, "", []string{"a", "c"}, "e"},
		{2, "e", []string{"e", "f"}, ""},
		{3, "", []string{"a", "c", "e"}, "f"},
		// A token whose item is no longer kept still marks the place.
		{1, "B", []string{"c"}, "e"},
		{2, "D", []string{"e", "f"}, ""},
		{2, "zz", []string{}, ""},
	}
	for _, c := range cases {
		page, next, err := paginate(items, &structs.QueryOptions{PerPage: c.per, NextToken: c.token}, id, lower)
		if err != nil || !reflect.DeepEqual(page, c.page) || next != c.next {
			t.Errorf("per=%d token=%q: got %v %q %v, want %v %q", c.per, c.token, page, next, err, c.page, c.next)
		}
	}
	// keep runs only up to the first item of the next page; its error ends
	// the page.
	var seen []string
	boom := errors.New("boom")
	_, _, err := paginate(items, &structs.QueryOptions{PerPage: 1}, id, func(s string) (bool, error) {
		seen = append(seen, s)
		if s == "c" {
			return false, boom
		}
		return true, nil
	})
	if err != nil || !reflect.DeepEqual(seen, []string{"a", "B"}) {
		t.Fatalf("keep saw %v (err %v), want [a B]", seen, err)
	}
	if _, _, err := paginate(items, &structs.QueryOptions{}, id, func(s string) (bool, error) { return true, boom }); err != boom {
		t.Fatalf("keep's error: %v", err)
	}
}
