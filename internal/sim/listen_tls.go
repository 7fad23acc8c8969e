package sim

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"sync"
	"time"
)

// tlsRecordHandshake is the first byte of a TLS ClientHello (a handshake
// record); an HTTP request starts with a method's letter, an HTTP/2 one
// with "PRI".
const tlsRecordHandshake = 0x16

// sniffTimeout bounds how long an accepted connection may stay silent
// before the simulator gives up telling TLS from plain text.
const sniffTimeout = 10 * time.Second

// simCert is the self-signed certificate a container's port shows to a
// TLS client (an httpGet probe with scheme HTTPS: the kubelet does not
// verify it, InsecureSkipVerify in pkg/probe/http/http.go), made once per
// process.
var simCert = sync.OnceValues(func() (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "podstep-sim"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	}, nil
})

// sniffListener accepts connections in plain text and in TLS on one port:
// each accepted connection's first byte says which (a TLS handshake
// record, or anything else), so one listener answers httpGet probes of
// both schemes, tcpSocket probes and plaintext gRPC. Connections still
// being sniffed are closed with the listener.
type sniffListener struct {
	net.Listener
	tls   *tls.Config // nil: no TLS (the certificate could not be made)
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once

	mu      sync.Mutex
	pending map[net.Conn]bool
	wg      sync.WaitGroup
}

func newSniffListener(ln net.Listener, cfg *tls.Config) *sniffListener {
	l := &sniffListener{Listener: ln, tls: cfg, conns: make(chan net.Conn), done: make(chan struct{}), pending: map[net.Conn]bool{}}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

func (l *sniffListener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		select {
		case <-l.done:
			l.mu.Unlock()
			_ = c.Close()
			return
		default:
		}
		l.pending[c] = true
		l.wg.Add(1)
		l.mu.Unlock()
		go l.sniff(c)
	}
}

// sniff reads c's first byte and hands c, wrapped in TLS when it starts a
// handshake, to Accept.
func (l *sniffListener) sniff(c net.Conn) {
	defer l.wg.Done()
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	b, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	l.mu.Lock()
	delete(l.pending, c)
	l.mu.Unlock()
	if err != nil {
		_ = c.Close() // a tcpSocket probe: connected and gone
		return
	}
	var out net.Conn = &peekedConn{Conn: c, r: br}
	if b[0] == tlsRecordHandshake && l.tls != nil {
		out = tls.Server(out, l.tls)
	}
	select {
	case l.conns <- out:
	case <-l.done:
		_ = c.Close()
	}
}

// Accept implements net.Listener.
func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener: the port and every connection not yet
// accepted are closed, and Close returns once its goroutines are gone.
func (l *sniffListener) Close() error {
	var err error
	l.once.Do(func() {
		l.mu.Lock()
		close(l.done)
		for c := range l.pending {
			_ = c.Close()
		}
		l.mu.Unlock()
		err = l.Listener.Close()
		l.wg.Wait()
	})
	return err
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
