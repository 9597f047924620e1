package jobspec

import (
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	"golang.org/x/crypto/bcrypt"
)

// The functions of Nomad's library that go-cty's stdlib does not have:
// cidr*, uuidv5, urlencode, bcrypt, and the path functions.

var cidrHostFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}, {Name: "hostnum", Type: cty.Number}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		_, network, err := net.ParseCIDR(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("invalid CIDR expression: %s", err)
		}
		hostnum := args[1].AsBigFloat()
		if !hostnum.IsInt() {
			return cty.UnknownVal(cty.String), fmt.Errorf("hostnum must be a whole number")
		}
		n, _ := hostnum.Int(nil)
		ip, err := hostAddr(network, n)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		return cty.StringVal(ip.String()), nil
	},
})

// hostAddr is the address number n inside network; a negative n counts back
// from the last address.
func hostAddr(network *net.IPNet, n *big.Int) (net.IP, error) {
	ones, bits := network.Mask.Size()
	size := new(big.Int).Lsh(big.NewInt(1), uint(bits-ones))
	if n.Sign() < 0 {
		n = new(big.Int).Add(size, n)
	}
	if n.Sign() < 0 || n.Cmp(size) >= 0 {
		return nil, fmt.Errorf("prefix of %d bits cannot accommodate a host numbered %s", ones, n)
	}
	base := new(big.Int).SetBytes(ipBytes(network.IP, bits))
	return bigToIP(base.Add(base, n), bits), nil
}

func ipBytes(ip net.IP, bits int) []byte {
	if bits == 32 {
		return ip.To4()
	}
	return ip.To16()
}

func bigToIP(n *big.Int, bits int) net.IP {
	b := n.Bytes()
	out := make([]byte, bits/8)
	copy(out[len(out)-len(b):], b)
	return net.IP(out)
}

var cidrNetmaskFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		_, network, err := net.ParseCIDR(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("invalid CIDR expression: %s", err)
		}
		if network.IP.To4() == nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("IPv6 addresses cannot have a netmask: %s", args[0].AsString())
		}
		return cty.StringVal(net.IP(network.Mask).String()), nil
	},
})

// subnet is the netnum'th subnet of network with newbits more prefix bits.
func subnet(network *net.IPNet, newbits int, netnum *big.Int) (*net.IPNet, error) {
	ones, bits := network.Mask.Size()
	if newbits < 0 || ones+newbits > bits {
		return nil, fmt.Errorf("insufficient address space to extend prefix of %d by %d", ones, newbits)
	}
	if netnum.Sign() < 0 || netnum.Cmp(new(big.Int).Lsh(big.NewInt(1), uint(newbits))) >= 0 {
		return nil, fmt.Errorf("prefix extension of %d does not accommodate a subnet numbered %s", newbits, netnum)
	}
	base := new(big.Int).SetBytes(ipBytes(network.IP, bits))
	base.Or(base, new(big.Int).Lsh(netnum, uint(bits-ones-newbits)))
	return &net.IPNet{IP: bigToIP(base, bits), Mask: net.CIDRMask(ones+newbits, bits)}, nil
}

var cidrSubnetFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}, {Name: "newbits", Type: cty.Number}, {Name: "netnum", Type: cty.Number}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		_, network, err := net.ParseCIDR(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("invalid CIDR expression: %s", err)
		}
		newbits, _ := args[1].AsBigFloat().Int64()
		netnum, _ := args[2].AsBigFloat().Int(nil)
		sn, err := subnet(network, int(newbits), netnum)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		return cty.StringVal(sn.String()), nil
	},
})

// cidrSubnetsFunc allocates consecutive subnets of the given sizes, each
// aligned to its own size, as Terraform's and Nomad's cidrsubnets do.
var cidrSubnetsFunc = function.New(&function.Spec{
	Params:   []function.Parameter{{Name: "prefix", Type: cty.String}},
	VarParam: &function.Parameter{Name: "newbits", Type: cty.Number},
	Type:     function.StaticReturnType(cty.List(cty.String)),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		_, network, err := net.ParseCIDR(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.List(cty.String)), fmt.Errorf("invalid CIDR expression: %s", err)
		}
		if len(args) == 1 {
			return cty.ListValEmpty(cty.String), nil
		}
		ones, bits := network.Mask.Size()
		start := new(big.Int).SetBytes(ipBytes(network.IP, bits))
		end := new(big.Int).Add(start, new(big.Int).Lsh(big.NewInt(1), uint(bits-ones)))
		next := new(big.Int).Set(start)
		var out []cty.Value
		for i, a := range args[1:] {
			nb, _ := a.AsBigFloat().Int64()
			if nb < 1 || ones+int(nb) > bits {
				return cty.UnknownVal(cty.List(cty.String)), fmt.Errorf("invalid newbits index %d: not enough address space for %d more bits", i, nb)
			}
			size := new(big.Int).Lsh(big.NewInt(1), uint(bits-ones-int(nb)))
			// Align up to the subnet size.
			rem := new(big.Int).Mod(new(big.Int).Sub(next, start), size)
			if rem.Sign() != 0 {
				next.Add(next, new(big.Int).Sub(size, rem))
			}
			if new(big.Int).Add(next, size).Cmp(end) > 0 {
				return cty.UnknownVal(cty.List(cty.String)), fmt.Errorf("not enough remaining address space for a subnet with a prefix of %d bits after %s", ones+int(nb), out[len(out)-1].AsString())
			}
			sn := &net.IPNet{IP: bigToIP(next, bits), Mask: net.CIDRMask(ones+int(nb), bits)}
			out = append(out, cty.StringVal(sn.String()))
			next.Add(next, size)
		}
		return cty.ListVal(out), nil
	},
})

var uuidv5Func = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "namespace", Type: cty.String}, {Name: "name", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		var ns uuid.UUID
		switch n := args[0].AsString(); n {
		case "dns":
			ns = uuid.NameSpaceDNS
		case "url":
			ns = uuid.NameSpaceURL
		case "oid":
			ns = uuid.NameSpaceOID
		case "x500":
			ns = uuid.NameSpaceX500
		default:
			var err error
			if ns, err = uuid.Parse(n); err != nil {
				return cty.UnknownVal(cty.String), fmt.Errorf("uuidv5() doesn't support namespace %q (%v)", n, err)
			}
		}
		return cty.StringVal(uuid.NewSHA1(ns, []byte(args[1].AsString())).String()), nil
	},
})

var urlencodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(url.QueryEscape(args[0].AsString())), nil
	},
})

var bcryptFunc = function.New(&function.Spec{
	Params:   []function.Parameter{{Name: "str", Type: cty.String}},
	VarParam: &function.Parameter{Name: "cost", Type: cty.Number},
	Type:     function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		cost := bcrypt.DefaultCost
		if len(args) > 2 {
			return cty.UnknownVal(cty.String), fmt.Errorf("bcrypt() takes at most one cost argument")
		}
		if len(args) == 2 {
			c, _ := args[1].AsBigFloat().Int64()
			cost = int(c)
		}
		h, err := bcrypt.GenerateFromPassword([]byte(args[0].AsString()), cost)
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("error occurred generating password: %s", err)
		}
		return cty.StringVal(string(h)), nil
	},
})

func stringFunc(f func(string) (string, error)) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			s, err := f(args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			return cty.StringVal(s), nil
		},
	})
}

var basenameFunc = stringFunc(func(p string) (string, error) { return filepath.Base(p), nil })
var dirnameFunc = stringFunc(func(p string) (string, error) { return filepath.Dir(p), nil })

var pathexpandFunc = stringFunc(func(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
})

// filesetFunc lists the files under path matching pattern (filepath.Match
// syntax per path element, plus "**" for any depth), relative to path, sorted.
func filesetFunc(baseDir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}, {Name: "pattern", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Set(cty.String)),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			root := resolve(baseDir, args[0].AsString())
			pattern := args[1].AsString()
			var out []cty.Value
			err := filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
				if err != nil || de.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(root, p)
				if globMatch(strings.Split(pattern, "/"), strings.Split(filepath.ToSlash(rel), "/")) {
					out = append(out, cty.StringVal(filepath.ToSlash(rel)))
				}
				return nil
			})
			if err != nil {
				return cty.UnknownVal(cty.Set(cty.String)), fmt.Errorf("failed to glob pattern %q: %s", pattern, err)
			}
			if len(out) == 0 {
				return cty.SetValEmpty(cty.String), nil
			}
			return cty.SetVal(out), nil
		},
	})
}

func globMatch(pat, parts []string) bool {
	if len(pat) == 0 {
		return len(parts) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(parts); i++ {
			if globMatch(pat[1:], parts[i:]) {
				return true
			}
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	ok, _ := filepath.Match(pat[0], parts[0])
	return ok && globMatch(pat[1:], parts[1:])
}

// coalesceFunc returns the first argument that is neither null nor an empty
// string, as the jobspec documentation describes coalesce (go-cty's own
// version returns "" when it comes first).
var coalesceFunc = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "vals", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		return stdlib.CoalesceFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		for _, a := range args {
			if a.IsNull() || (a.Type() == cty.String && a.IsKnown() && a.AsString() == "") {
				continue
			}
			return convert.Convert(a, retType)
		}
		return cty.NilVal, fmt.Errorf("no non-null, non-empty-string arguments")
	},
})

// indexFunc is index(list, value): the position of the first element equal
// to value (go-cty's IndexFunc is the subscript operator instead).
var indexFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}, {Name: "value", Type: cty.DynamicPseudoType}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		t := args[0].Type()
		if !(t.IsListType() || t.IsTupleType()) {
			return cty.NilVal, fmt.Errorf("argument must be a list or tuple")
		}
		for it := args[0].ElementIterator(); it.Next(); {
			i, v := it.Element()
			if eq, err := stdlib.Equal(v, args[1]); err == nil && eq.IsKnown() && eq.True() {
				return i, nil
			}
		}
		return cty.NilVal, fmt.Errorf("item not found")
	},
})
