package rpc

import (
	"io"
	"net"
	"net/rpc"
	"testing"
	"time"
)

// A protocol byte with a registered handler hands the connection over
// (after the byte); one without is closed; Close ends handed connections.
func TestListenerHandsRegisteredProtocols(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(ln, rpc.NewServer(), nil, nil)
	got := make(chan net.Conn, 1)
	l.Handle(ProtoNodeSession, func(c net.Conn) {
		got <- c
		_, _ = io.Copy(c, c) // echo until closed
	})
	go l.Serve()
	defer l.Close()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{ProtoNodeSession, 'h', 'i'}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hi" {
		t.Fatalf("echo %q %v", buf, err)
	}
	<-got

	other, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, _ = other.Write([]byte{0x7f})
	_ = other.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := other.Read(buf); err != io.EOF {
		t.Fatalf("an unknown protocol byte: %v, want the connection closed", err)
	}

	l.Close()
	if _, err := c.Read(buf); err == nil {
		t.Fatal("a handed connection outlived the listener")
	}
}
