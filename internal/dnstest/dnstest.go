// Package dnstest is a DNS server for tests: it answers A and AAAA
// questions for the names it is given, so a test can make a host name
// resolve to 127.0.0.1 or 169.254.169.254 without touching the system's
// resolver. Resolver returns a net.Resolver that asks it and nothing else.
package dnstest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Server answers for its names over UDP on loopback.
type Server struct {
	conn net.PacketConn
	mu   sync.Mutex
	// names maps a lowercase name without its trailing dot to its
	// addresses.
	names map[string][]netip.Addr
}

// New starts a server answering for names (name → addresses); it stops
// when t ends.
func New(t testing.TB, names map[string][]string) *Server {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{conn: conn, names: map[string][]netip.Addr{}}
	for n, addrs := range names {
		s.Set(n, addrs...)
	}
	go s.serve()
	t.Cleanup(func() { conn.Close() })
	return s
}

// Set makes name resolve to addrs from now on (a rebinding test changes
// it between two lookups).
func (s *Server) Set(name string, addrs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	s.names[strings.ToLower(strings.TrimSuffix(name, "."))] = out
}

// Resolver asks this server only (Go's resolver, over UDP).
func (s *Server) Resolver() *net.Resolver {
	addr := s.conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func (s *Server) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if out, ok := s.answer(buf[:n]); ok {
			_, _ = s.conn.WriteTo(out, from)
		}
	}
}

func (s *Server) answer(req []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	s.mu.Lock()
	addrs, known := s.names[name]
	s.mu.Unlock()
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, false
	}
	if err := b.Question(q); err != nil {
		return nil, false
	}
	if err := b.StartAnswers(); err != nil {
		return nil, false
	}
	for _, a := range addrs {
		rrh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			if err := b.AResource(rrh, dnsmessage.AResource{A: a.As4()}); err != nil {
				return nil, false
			}
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			if err := b.AAAAResource(rrh, dnsmessage.AAAAResource{AAAA: a.As16()}); err != nil {
				return nil, false
			}
		}
	}
	out, err := b.Finish()
	return out, err == nil
}
