package jobspec

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// functionCases has at least one case per function of the library: the
// expression and the JSON of its value ("~re" matches a regular expression,
// "!text" expects an error containing text).
var functionCases = []struct{ expr, want string }{
	// numeric
	{`abs(-3.5)`, `3.5`}, {`ceil(1.2)`, `2`}, {`floor(1.8)`, `1`}, {`log(8, 2)`, `3`},
	{`max(1, 9, 4)`, `9`}, {`min(3, 2)`, `2`}, {`parseint("ff", 16)`, `255`},
	{`pow(2, 10)`, `1024`}, {`signum(-7)`, `-1`},
	// string
	{`chomp("a\n")`, `"a"`}, {`format("%s-%03d", "x", 7)`, `"x-007"`},
	{`formatlist("%s!", ["a", "b"])`, `["a!","b!"]`}, {`indent(2, "a\nb")`, `"a\n  b"`},
	{`join("-", ["a", "b"])`, `"a-b"`}, {`lower("AB")`, `"ab"`}, {`upper("ab")`, `"AB"`},
	{`regex("[0-9]+", "ab12c")`, `"12"`}, {`regexall("[0-9]", "a1b2")`, `["1","2"]`},
	{`regex_replace("a1b2", "[0-9]", "#")`, `"a#b#"`},
	{`replace("a.b.c", ".", "-")`, `"a-b-c"`}, {`replace("a1b22", "/[0-9]+/", "_")`, `"a_b_"`},
	{`split(",", "a,b")`, `["a","b"]`}, {`strrev("abc")`, `"cba"`}, {`substr("hello", 1, 3)`, `"ell"`},
	{`title("hello world")`, `"Hello World"`}, {`trim("xxaxx", "x")`, `"a"`},
	{`trimprefix("prefix-a", "prefix-")`, `"a"`}, {`trimsuffix("a.txt", ".txt")`, `"a"`},
	{`trimspace("  a ")`, `"a"`}, {`strlen("héllo")`, `5`},
	// collection
	{`chunklist([1, 2, 3], 2)`, `[[1,2],[3]]`}, {`coalesce("", "b")`, `"b"`},
	{`coalescelist([], ["x"])`, `["x"]`}, {`compact(["a", "", "b"])`, `["a","b"]`},
	{`concat([1], [2, 3])`, `[1,2,3]`}, {`contains(["a"], "a")`, `true`},
	{`distinct(["a", "a", "b"])`, `["a","b"]`}, {`element(["a", "b"], 3)`, `"b"`},
	{`flatten([[1], [2, [3]]])`, `[1,2,3]`}, {`index(["a", "b"], "b")`, `1`}, {`index(["a"], "z")`, `!not found`}, {`coalesce("", null, "c")`, `"c"`},
	{`keys({b = 1, a = 2})`, `["a","b"]`}, {`length([1, 2])`, `2`}, {`length("abc")`, `3`},
	{`lookup({a = "x"}, "b", "dflt")`, `"dflt"`}, {`merge({a = 1}, {b = 2})`, `{"a":1,"b":2}`},
	{`range(3)`, `[0,1,2]`}, {`reverse([1, 2])`, `[2,1]`},
	{`setintersection(["a", "b"], ["b"])`, `["b"]`}, {`setproduct(["a"], ["x", "y"])`, `[["a","x"],["a","y"]]`},
	{`setsubtract(["a", "b"], ["a"])`, `["b"]`}, {`setunion(["a"], ["b"])`, `["a","b"]`},
	{`slice([1, 2, 3], 1, 3)`, `[2,3]`}, {`sort(["b", "a"])`, `["a","b"]`},
	{`values({a = 1, b = 2})`, `[1,2]`}, {`zipmap(["a", "b"], [1, 2])`, `{"a":1,"b":2}`},
	// encoding
	{`base64encode("drover")`, `"ZHJvdmVy"`}, {`base64decode("ZHJvdmVy")`, `"drover"`},
	{`base64decode("%%")`, `!base64`},
	{`csvdecode("a,b\n1,2\n")`, `[{"a":"1","b":"2"}]`},
	{`jsonencode({a = [1, true]})`, `"{\"a\":[1,true]}"`}, {`jsondecode("{\"a\":1}")`, `{"a":1}`},
	{`urlencode("a b&c")`, `"a+b%26c"`},
	// crypto
	{`md5("drover")`, `"~^\"[0-9a-f]{32}\"$"`},
	{`sha1("abc")`, `"a9993e364706816aba3e25717850c26c9cd0d89d"`},
	{`sha256("abc")`, `"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`},
	{`sha512("")`, `"cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"`},
	{`substr(bcrypt("pw", 4), 0, 7)`, `"$2a$04$"`},
	// uuid
	{`uuidv4()`, `"~^\"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\"$"`},
	{`uuidv5("dns", "www.example.com")`, `"2ed6657d-e927-568b-95e1-2665a8aea6a2"`},
	{`uuidv5("nope", "x")`, `!namespace`},
	// cidr
	{`cidrhost("10.12.112.0/20", 16)`, `"10.12.112.16"`}, {`cidrhost("10.12.112.0/20", 268)`, `"10.12.113.12"`},
	{`cidrhost("10.0.0.0/24", -1)`, `"10.0.0.255"`}, {`cidrhost("fd00:fd12:3456:7890:00a2::/72", 34)`, `"fd00:fd12:3456:7890::22"`},
	{`cidrhost("10.0.0.0/30", 4)`, `!cannot accommodate`},
	{`cidrnetmask("172.16.0.0/12")`, `"255.240.0.0"`},
	{`cidrsubnet("172.16.0.0/12", 4, 2)`, `"172.18.0.0/16"`}, {`cidrsubnet("10.1.2.0/24", 4, 15)`, `"10.1.2.240/28"`},
	{`cidrsubnet("fd00:fd12:3456:7890::/56", 16, 162)`, `"fd00:fd12:3456:7800:a200::/72"`},
	{`cidrsubnet("10.0.0.0/30", 4, 0)`, `!insufficient address space`},
	{`cidrsubnets("10.1.0.0/16", 4, 4, 8, 4)`, `["10.1.0.0/20","10.1.16.0/20","10.1.32.0/24","10.1.48.0/20"]`},
	// date and time
	{`formatdate("YYYY-MM-DD hh:mm", "2024-03-05T07:08:09Z")`, `"2024-03-05 07:08"`},
	{`timeadd("2024-01-01T00:00:00Z", "90m")`, `"2024-01-01T01:30:00Z"`},
	// conversion
	{`tobool("true")`, `true`}, {`tonumber("42")`, `42`}, {`tostring(5)`, `"5"`},
	{`tolist(["a"])`, `["a"]`}, {`toset(["b", "a", "b"])`, `["a","b"]`}, {`tomap({a = "x"})`, `{"a":"x"}`},
	{`try(tonumber("x"), 7)`, `7`}, {`can(tonumber("x"))`, `false`}, {`can(tonumber("1"))`, `true`},
	{`convert("5", number)`, `5`}, {`convert(["a", "b"], set(string))`, `["a","b"]`},
	{`convert("x", bool)`, `!bool`},
	// yaml
	{`yamlencode({b = "x", a = [1, {c = true, d = null}], e = {}, f = [], g = {h = "i\"j"}})`,
		`"\"a\":\n- 1\n- \"c\": true\n  \"d\": null\n\"b\": \"x\"\n\"e\": {}\n\"f\": []\n\"g\":\n  \"h\": \"i\\\"j\"\n"`},
	{`yamlencode("plain")`, `"\"plain\"\n"`}, {`yamlencode([[1, 2], 3.5])`, `"- - 1\n  - 2\n- 3.5\n"`},
	{`yamldecode("a: 1\nb: [x, true, null, 0x10]\nc:\n  d: \"2\"\n")`, `{"a":1,"b":["x",true,null,16],"c":{"d":"2"}}`},
	{`yamldecode("base: &b {x: 1}\nother: *b\n")`, `{"base":{"x":1},"other":{"x":1}}`},
	{`yamldecode(yamlencode({k = ["v", 2]}))`, `{"k":["v",2]}`},
	{`yamldecode("a: [")`, `!failed to parse YAML`},
	// rsadecrypt's decrypting case needs a key: TestRSADecrypt.
	{`rsadecrypt("%%", "key")`, `!base64`}, {`rsadecrypt("AAAA", "not a key")`, `!invalid private key`},
	// Nomad leaves out the functions whose result changes from run to run.
	{`timestamp()`, `!no function named`},
	// Without AllowFS (/v1/jobs/parse) the file functions exist but refuse.
	{`file("x")`, `!filesystem function file() disabled`}, {`filebase64("x")`, `!disabled`},
	{`fileexists("x")`, `!disabled`}, {`fileset(".", "*")`, `!disabled`}, {`abspath("x")`, `!disabled`},
	{`basename("/a/b")`, `!disabled`}, {`dirname("/a/b")`, `!disabled`}, {`pathexpand("~")`, `!disabled`},
	{`templatefile("t.tpl", {})`, `!disabled`},
}

// TestRSADecrypt decrypts a ciphertext made by openssl (PKCS#1 v1.5) with
// the key beside it in testdata/functions.
func TestRSADecrypt(t *testing.T) {
	key, err := os.ReadFile(filepath.Join("testdata", "functions", "rsadecrypt_key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	ct, err := os.ReadFile(filepath.Join("testdata", "functions", "rsadecrypt_ciphertext.b64"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := &hcl.EvalContext{Functions: functions(".", false), Variables: map[string]cty.Value{
		"ct": cty.StringVal(strings.TrimSpace(string(ct))), "key": cty.StringVal(string(key)),
	}}
	for _, tc := range []struct{ expr, want string }{
		{`rsadecrypt(ct, key)`, `"drover secret"`},
		{`rsadecrypt(base64encode("garbage"), key)`, `!failed to decrypt`},
	} {
		expr, _ := hclsyntax.ParseExpression([]byte(tc.expr), "f.hcl", hcl.Pos{Line: 1, Column: 1})
		v, diags := expr.Value(ctx)
		if want, ok := strings.CutPrefix(tc.want, "!"); ok {
			if !diags.HasErrors() || !strings.Contains(diags.Error(), want) {
				t.Errorf("%s: want error %q, got %v", tc.expr, want, diags)
			}
			continue
		}
		if diags.HasErrors() {
			t.Fatalf("%s: %v", tc.expr, diags)
		}
		if b, _ := ctyjson.Marshal(v, v.Type()); string(b) != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, b, tc.want)
		}
	}
}

func TestFunctionLibrary(t *testing.T) {
	ctx := &hcl.EvalContext{Functions: functions(".", false)}
	covered := map[string]bool{}
	for _, tc := range functionCases {
		expr, diags := hclsyntax.ParseExpression([]byte(tc.expr), "f.hcl", hcl.Pos{Line: 1, Column: 1})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", tc.expr, diags)
		}
		for _, call := range regexp.MustCompile(`([a-z0-9_]+)\(`).FindAllStringSubmatch(tc.expr, -1) {
			covered[call[1]] = true
		}
		v, diags := expr.Value(ctx)
		if strings.HasPrefix(tc.want, "!") {
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want[1:]) {
				t.Errorf("%s: want an error containing %q, got %v", tc.expr, tc.want[1:], diags)
			}
			continue
		}
		if diags.HasErrors() {
			t.Errorf("%s: %v", tc.expr, diags)
			continue
		}
		b, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			t.Fatal(err)
		}
		got := string(b)
		if re, ok := strings.CutPrefix(strings.Trim(tc.want, `"`), "~"); ok {
			if !regexp.MustCompile(strings.ReplaceAll(re, `\"`, `"`)).MatchString(got) {
				t.Errorf("%s = %s, want match of %s", tc.expr, got, re)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
		}
	}
	var missing []string
	for name := range functions(".", false) {
		if !covered[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("functions without a table case: %v", missing)
	}
}

// TestFileFunctions covers the functions that exist only with AllowFS.
func TestFileFunctions(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "conf", "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "conf", "a.txt"), []byte("hello"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "conf", "sub", "b.txt"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "conf", "c.json"), []byte("{}"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "conf", "t.tpl"), []byte(
		"job ${name}\n%{ for p in ports ~}\nport ${p}\n%{ endfor ~}\n%{ if tls }TLS on\n%{ endif }${upper(name)}\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "conf", "bad.tpl"), []byte("${missing}"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "conf", "rec.tpl"), []byte(`${templatefile("conf/t.tpl", {})}`), 0o644))
	home, _ := os.UserHomeDir()
	abs, _ := filepath.Abs("rel")
	ctx := &hcl.EvalContext{Functions: functions(dir, true)}
	for _, tc := range []struct{ expr, want string }{
		{`file("conf/a.txt")`, `"hello"`},
		{`fileexists("conf/a.txt")`, `true`},
		{`fileexists("conf/none")`, `false`},
		{`fileexists("conf")`, `false`},
		{`fileset("conf", "*.txt")`, `["a.txt"]`},
		{`fileset("conf", "**/*.txt")`, `["a.txt","sub/b.txt"]`},
		{`basename("/a/b/c.txt")`, `"c.txt"`},
		{`dirname("/a/b/c.txt")`, `"/a/b"`},
		{`pathexpand("~/x")`, `"` + filepath.Join(home, "x") + `"`},
		{`pathexpand("/abs")`, `"/abs"`},
		{`abspath("rel")`, `"` + abs + `"`},
		{`filebase64("conf/a.txt")`, `"aGVsbG8="`},
		{`templatefile("conf/t.tpl", {name = "web", ports = [80, 443], tls = true})`,
			`"job web\nport 80\nport 443\nTLS on\nWEB\n"`},
		{`templatefile("conf/t.tpl", {name = "db", ports = [], tls = false})`, `"job db\nDB\n"`},
	} {
		expr, _ := hclsyntax.ParseExpression([]byte(tc.expr), "f.hcl", hcl.Pos{Line: 1, Column: 1})
		v, diags := expr.Value(ctx)
		if diags.HasErrors() {
			t.Errorf("%s: %v", tc.expr, diags)
			continue
		}
		b, _ := ctyjson.Marshal(v, v.Type())
		if string(b) != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, b, tc.want)
		}
	}
	for expr, want := range map[string]string{
		`templatefile("conf/bad.tpl", {})`:  `vars map does not contain key "missing"`,
		`templatefile("conf/rec.tpl", {})`:  `templatefile`,
		`templatefile("conf/t.tpl", "str")`: `must be a map or an object`,
		`filebase64("conf/none")`:           `no such file`,
	} {
		e, _ := hclsyntax.ParseExpression([]byte(expr), "f.hcl", hcl.Pos{Line: 1, Column: 1})
		if _, diags := e.Value(ctx); !diags.HasErrors() || !strings.Contains(diags.Error(), want) {
			t.Errorf("%s: want error %q, got %v", expr, want, diags)
		}
	}
	if _, err := Parse("p.hcl", []byte(`job "x" { region = file("conf/a.txt") }`), ParseConfig{}); err == nil || !strings.Contains(err.Error(), "file") {
		t.Errorf("file() without AllowFS: got %v", err)
	}
}
