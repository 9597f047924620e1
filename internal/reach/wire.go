package reach

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"time"

	"github.com/hashicorp/yamux"
)

// maxLine bounds a hello or reply line.
const maxLine = 4096

// handshakeTimeout bounds the hello and its reply.
const handshakeTimeout = 10 * time.Second

type sessionHello struct {
	NodeID   string
	SecretID string
}

type tunnelHello struct {
	NodeID string
	Search bool
}

type reply struct {
	Error string
}

// writeLine writes v as one JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readLine reads one JSON line into v, a byte at a time so nothing past the
// line is consumed (the connection carries other bytes after it).
func readLine(r io.Reader, v any) error {
	var buf []byte
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return err
		}
		if b[0] == '\n' {
			break
		}
		if len(buf) >= maxLine {
			return errors.New("reach: handshake line too long")
		}
		buf = append(buf, b[0])
	}
	return json.Unmarshal(buf, v)
}

// handshake runs fn with a deadline on conn.
func handshake(conn net.Conn, fn func() error) error {
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	err := fn()
	_ = conn.SetDeadline(time.Time{})
	return err
}

func yamuxConfig() *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	cfg.EnableKeepAlive = true
	cfg.KeepAliveInterval = 10 * time.Second
	cfg.ConnectionWriteTimeout = 30 * time.Second
	cfg.AcceptBacklog = 256
	cfg.MaxStreamWindowSize = 1 << 20
	return cfg
}

// pipe copies both ways until either side ends, then closes both.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	a.Close()
	b.Close()
	<-done
}
