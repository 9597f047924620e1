package getter

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"strings"
)

// hashes are the checksum types, by name and by hex length.
var hashes = map[string]func() hash.Hash{
	"md5": md5.New, "sha1": sha1.New, "sha256": sha256.New, "sha512": sha512.New,
}

var typeByLen = map[int]string{32: "md5", 40: "sha1", 64: "sha256", 128: "sha512"}

// splitChecksum reads "type:hex", "file:url" or a bare hex digest (its
// type guessed from its length, as go-getter does).
func splitChecksum(c string) (typ, val string, err error) {
	typ, val, ok := strings.Cut(c, ":")
	if !ok {
		typ, val = "", c
	}
	typ = strings.ToLower(typ)
	if typ == "file" {
		if val == "" {
			return "", "", fmt.Errorf("checksum %q: file: needs the URL of a checksum file", c)
		}
		return typ, val, nil
	}
	if typ == "" {
		if typ = typeByLen[len(val)]; typ == "" {
			return "", "", fmt.Errorf("checksum %q: want type:value with type md5, sha1, sha256, sha512 or file", c)
		}
	}
	if hashes[typ] == nil {
		return "", "", fmt.Errorf("checksum %q: unknown type %q (want md5, sha1, sha256, sha512 or file)", c, typ)
	}
	if want := hashes[typ]().Size(); len(val) != 2*want {
		return "", "", fmt.Errorf("checksum %q: a %s checksum has %d hex digits, not %d", c, typ, 2*want, len(val))
	}
	if _, err := hex.DecodeString(val); err != nil {
		return "", "", fmt.Errorf("checksum %q: the value is not hexadecimal", c)
	}
	return typ, strings.ToLower(val), nil
}

// verifyChecksum checks the file at p against the source's checksum;
// name is the source's file name (to find it in a checksum file).
func (f *fetcher) verifyChecksum(ctx context.Context, p, checksum, name string) error {
	typ, want, err := splitChecksum(checksum)
	if err != nil {
		return err
	}
	if typ == "file" {
		if typ, want, err = f.checksumFromFile(ctx, want, name); err != nil {
			return err
		}
	}
	file, err := os.Open(p)
	if err != nil {
		return err
	}
	defer file.Close()
	h := hashes[typ]()
	if _, err := io.Copy(h, file); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("checksums did not match: expected %s %s, got %s", typ, want, got)
	}
	return nil
}

// maxChecksumFile bounds a checksum file.
const maxChecksumFile = 1 << 20

// checksumFromFile fetches a checksum file (sha256sum's "hex  name" or
// "hex *name" lines, BSD's "SHA256 (name) = hex", or a lone digest) and
// returns the entry for name.
func (f *fetcher) checksumFromFile(ctx context.Context, src, name string) (string, string, error) {
	s, err := parseSource(src, nil)
	if err != nil {
		return "", "", fmt.Errorf("checksum file %q: %v", src, err)
	}
	tmp, err := os.CreateTemp(f.tmp, "checksum-")
	if err != nil {
		return "", "", err
	}
	tmp.Close()
	lim := f.cfg
	lim.HTTPMaxSize = maxChecksumFile
	g := &fetcher{cfg: lim, req: f.req, tmp: f.tmp}
	if err := g.download(ctx, s, tmp.Name()); err != nil {
		return "", "", fmt.Errorf("checksum file %q: %v", src, err)
	}
	file, err := os.Open(tmp.Name())
	if err != nil {
		return "", "", err
	}
	defer file.Close()
	base := path.Base(name)
	var lone []string
	sc := bufio.NewScanner(io.LimitReader(file, maxChecksumFile))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var digest, file string
		if i := strings.Index(line, ") = "); i > 0 && strings.Contains(line[:i], " (") {
			j := strings.Index(line, " (")
			file, digest = line[j+2:i], strings.TrimSpace(line[i+4:])
		} else {
			fields := strings.Fields(line)
			digest = fields[0]
			if len(fields) == 1 {
				lone = append(lone, digest)
				continue
			}
			file = strings.TrimPrefix(fields[1], "*")
		}
		if file == base || path.Base(file) == base {
			typ, val, err := splitChecksum(digest)
			if err != nil {
				return "", "", fmt.Errorf("checksum file %q: %v", src, err)
			}
			return typ, val, nil
		}
	}
	if len(lone) == 1 {
		typ, val, err := splitChecksum(lone[0])
		if err != nil {
			return "", "", fmt.Errorf("checksum file %q: %v", src, err)
		}
		return typ, val, nil
	}
	return "", "", fmt.Errorf("checksum file %q has no checksum for %q", src, base)
}
