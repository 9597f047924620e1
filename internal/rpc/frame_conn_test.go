package rpc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/hashicorp/yamux"
)

// recConn records what reaches the socket, one entry per Write.
type recConn struct {
	net.Conn
	writes [][]byte
}

func (r *recConn) Write(p []byte) (int, error) {
	r.writes = append(r.writes, append([]byte(nil), p...))
	return len(p), nil
}

func header(typ byte, length uint32) []byte {
	h := make([]byte, yamuxHeaderSize)
	h[1] = typ
	binary.BigEndian.PutUint32(h[4:], 7)
	binary.BigEndian.PutUint32(h[8:], length)
	return h
}

func TestFrameConnKeepsDataHeaderForItsBody(t *testing.T) {
	rec := &recConn{}
	f := &frameConn{Conn: rec, out: rec}
	hdr := header(yamuxTypeData, 5)
	if n, err := f.Write(hdr); n != len(hdr) || err != nil {
		t.Fatalf("header write = %d, %v", n, err)
	}
	if len(rec.writes) != 0 {
		t.Fatalf("the header of a data frame reached the socket before its body: %x", rec.writes)
	}
	if n, err := f.Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("body write = %d, %v", n, err)
	}
	got := bytes.Join(rec.writes, nil)
	if want := append(append([]byte(nil), hdr...), "hello"...); !bytes.Equal(got, want) {
		t.Fatalf("socket got %x, want %x", got, want)
	}
	// Frames without a body go out at once: a window update, and a data
	// frame that only carries flags (length 0).
	for _, h := range [][]byte{header(1, 4096), header(yamuxTypeData, 0)} {
		rec.writes = nil
		f.Write(h)
		if len(rec.writes) != 1 || !bytes.Equal(rec.writes[0], h) {
			t.Fatalf("header %x: socket got %x, want it at once", h, rec.writes)
		}
	}
}

// Streams over a yamux session on frameConn (both ends, real TCP) carry
// every byte in order, whatever the sizes and concurrency.
func TestFrameConnUnderYamux(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		sess, err := yamux.Server(newFrameConn(c), yamuxConfig())
		if err != nil {
			return
		}
		for {
			st, err := sess.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(st, st); st.Close() }() // echo
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sess, err := yamux.Client(newFrameConn(c), yamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := sess.Open()
			if err != nil {
				errs <- err
				return
			}
			defer st.Close()
			// Sizes from one byte to past yamux's 256 KB window.
			msg := bytes.Repeat([]byte(fmt.Sprintf("%02d", i)), 1+i*i*1200)
			go st.Write(msg)
			back := make([]byte, len(msg))
			if _, err := io.ReadFull(st, back); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(back, msg) {
				errs <- fmt.Errorf("stream %d: echo differs", i)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
