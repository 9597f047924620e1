package fingerprint

import (
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
)

func TestForeignPorts_SeesListenerNotOwnedByTasks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	uc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	tcp := "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/tcp"
	udp := "127.0.0.1:" + strconv.Itoa(uc.LocalAddr().(*net.UDPAddr).Port) + "/udp"

	got, err := ForeignPorts("", []string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, tcp) || !slices.Contains(got, udp) {
		t.Fatalf("%s / %s not in %v", tcp, udp, got)
	}
	// Owned by a "task" (this process): not foreign.
	got, _ = ForeignPorts("", []string{"127.0.0.1"}, []int{os.Getpid()})
	if slices.Contains(got, tcp) || slices.Contains(got, udp) {
		t.Fatalf("own sockets reported as foreign: %v", got)
	}
	// Another address of the node: not ours to report.
	got, _ = ForeignPorts("", []string{"192.0.2.1"}, nil)
	if slices.Contains(got, tcp) {
		t.Fatalf("127.0.0.1 listener reported for another address: %v", got)
	}
}

func TestParseHexAddr(t *testing.T) {
	ip, port, err := parseHexAddr("0100007F:1F90")
	if err != nil || ip.String() != "127.0.0.1" || port != 8080 {
		t.Fatalf("%v %d %v", ip, port, err)
	}
	ip, _, err = parseHexAddr("00000000000000000000000001000000:0050")
	if err != nil || ip.String() != "::1" {
		t.Fatalf("v6 %v %v", ip, err)
	}
}
