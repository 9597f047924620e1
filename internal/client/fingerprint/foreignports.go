package fingerprint

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ForeignPorts lists sockets listening (tcp) or bound (udp) on one of addrs
// or a wildcard address whose inode is not held by any of ownPIDs (the
// processes of tasks the client started), as "ip:port/proto", sorted. A
// wildcard socket is reported once per node address. procRoot is "/proc"
// outside tests.
func ForeignPorts(procRoot string, addrs []string, ownPIDs []int) ([]string, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	own := map[string]bool{}
	for _, pid := range ownPIDs {
		fdDir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
		ents, err := os.ReadDir(fdDir)
		if err != nil {
			continue // exited meanwhile
		}
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
				own[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	nodeIPs := make([]net.IP, 0, len(addrs))
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil {
			nodeIPs = append(nodeIPs, ip)
		}
	}
	seen := map[string]bool{}
	for _, tab := range []struct{ file, proto, state string }{
		{"tcp", "tcp", "0A"}, {"tcp6", "tcp", "0A"}, {"udp", "udp", "07"}, {"udp6", "udp", "07"},
	} {
		f, err := os.Open(filepath.Join(procRoot, "net", tab.file))
		if err != nil {
			continue // no IPv6, etc.
		}
		s := bufio.NewScanner(f)
		s.Scan() // header
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) < 10 || fields[3] != tab.state || own[fields[9]] || fields[9] == "0" {
				continue
			}
			ip, port, err := parseHexAddr(fields[1])
			if err != nil {
				continue
			}
			for _, nip := range nodeIPs {
				if ip.IsUnspecified() || ip.Equal(nip) {
					seen[fmt.Sprintf("%s/%s", net.JoinHostPort(nip.String(), strconv.Itoa(port)), tab.proto)] = true
				}
			}
		}
		f.Close()
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// parseHexAddr parses /proc/net's "0100007F:1F90" (host byte order per
// 32-bit word) into an IP and port.
func parseHexAddr(s string) (net.IP, int, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, fmt.Errorf("bad address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, err
	}
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil, 0, fmt.Errorf("bad address %q", s)
	}
	ip := make(net.IP, len(b))
	for w := 0; w < len(b); w += 4 { // each 32-bit word is little-endian
		ip[w], ip[w+1], ip[w+2], ip[w+3] = b[w+3], b[w+2], b[w+1], b[w]
	}
	if v4 := ip.To4(); v4 != nil && len(b) == 16 {
		ip = v4
	}
	return ip, int(port), nil
}
