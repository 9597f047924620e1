package cpuset

import "testing"

func TestSetArithmetic(t *testing.T) {
	all, err := Parse("0-7")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		got  Set
		want string
	}{
		{"parse keeps ranges", all, "0-7"},
		{"difference splits ranges", all.Difference(New(2, 3, 6)), "0-1,4-5,7"},
		{"difference of nothing", all.Difference(Set{}), "0-7"},
		{"difference of everything", all.Difference(all), ""},
		{"union merges and sorts", New(5, 1).Union(New(2, 1, 0)), "0-2,5"},
		{"duplicates collapse", New(3, 3, 3), "3"},
	}
	for _, c := range cases {
		if c.got.String() != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got.String(), c.want)
		}
	}
	if !New(1, 2).Equal(New(2, 1)) || New(1).Equal(New(1, 2)) {
		t.Fatal("Equal compares contents")
	}
	if _, err := Parse("3-1"); err == nil {
		t.Fatal("a reversed range must be refused")
	}
}
