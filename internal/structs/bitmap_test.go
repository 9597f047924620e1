package structs

import (
	"reflect"
	"testing"
)

func TestBitmap(t *testing.T) {
	b := NewBitmap()
	if b.Size() != 65536 {
		t.Fatalf("size = %d, want 65536", b.Size())
	}
	for _, p := range []uint{0, 22, 80, 8000, 8001, 8002, 65535} {
		b.Set(p)
	}
	b.Set(70000) // out of range: ignored, no panic
	if !b.Check(22) || b.Check(23) || b.Check(70000) {
		t.Fatal("check mismatch")
	}
	if got, want := b.String(), "0,22,80,8000-8002,65535"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	if got := b.IndexesInRange(true, 1, 8001); !reflect.DeepEqual(got, []int{22, 80, 8000, 8001}) {
		t.Fatalf("IndexesInRange(set) = %v", got)
	}
	if got := b.IndexesInRange(false, 7999, 8003); !reflect.DeepEqual(got, []int{7999, 8003}) {
		t.Fatalf("IndexesInRange(unset) = %v", got)
	}
	c := b.Copy()
	b.Unset(22)
	if b.Check(22) || !c.Check(22) {
		t.Fatal("Unset or Copy broken")
	}
}
