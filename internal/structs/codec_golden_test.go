package structs

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/codec from the current encoder")

// TestCodecGolden decodes bodies written by the encoder that predates the
// generated codec methods (go-msgpack's reflection path, as Drover shipped
// it until structs.generated.go): Raft logs and snapshots written by it must
// still load. The fixtures have one-entry maps, so the bytes are
// deterministic and today's encoding must still be exactly them.
//
// The files were written with -update-golden before structs.generated.go was
// added. Do not regenerate them to fix a failure of the encoding check unless
// the wire format is meant to change; a field added to a fixture type (the
// fixtures fill every field) does need them regenerated, or the check relaxed
// for that field.
func TestCodecGolden(t *testing.T) {
	for name, want := range codecFixtures(1) {
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
			if !bytes.Equal(enc, golden) {
				t.Errorf("%s encodes to %d bytes that differ from the golden %d bytes", name, len(enc), len(golden))
			}
		})
	}
}
