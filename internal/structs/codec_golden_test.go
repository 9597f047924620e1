package structs

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// treeHandle decodes msgpack into generic values: maps (a struct's fields
// included) become Go maps, so field order does not matter, and msgpack's
// types stay apart (signed from unsigned integers, str from bin).
var treeHandle = &codec.MsgpackHandle{}

// msgpackTree decodes b into generic values.
func msgpackTree(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := codec.NewDecoderBytes(b, treeHandle).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/codec from the current encoder")

// TestCodecGolden decodes bodies written by the encoder that predates the
// generated codec methods (go-msgpack's reflection path, as Drover shipped
// it until structs.generated.go): Raft logs and snapshots written by it must
// still load. It also checks today's encoding says the same thing: the same
// fields with the same values in the same msgpack types. Not the same bytes:
// the reflection encoder writes a struct's fields sorted by name, the
// generated one in declaration order; both decoders find fields by name, so
// either reads the other's.
//
// The files were written with -update-golden before structs.generated.go was
// added. Do not regenerate them to fix a failure of the encoding check unless
// the wire format is meant to change; a field added to a fixture type (the
// fixtures fill every field) does need them regenerated, or the check relaxed
// for that field.
func TestCodecGolden(t *testing.T) {
	for name, want := range codecFixturesSkipping(1, addedSinceGolden) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "codec", name+".msgpack")
			enc, err := Encode(0, want)
			if err != nil {
				t.Fatal(err)
			}
			enc = enc[1:] // the message type byte
			if *updateGolden {
				if err := os.WriteFile(path, enc, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := reflect.New(reflect.TypeOf(want).Elem()).Interface()
			if err := Decode(golden, got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded golden %s differs from the fixture", name)
			}
			if len(enc) != len(golden) || !reflect.DeepEqual(msgpackTree(t, enc), msgpackTree(t, golden)) {
				t.Errorf("%s encodes (%d bytes) other than the golden body (%d bytes)", name, len(enc), len(golden))
			}
		})
	}
}
