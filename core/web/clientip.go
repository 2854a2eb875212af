package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// TrustedProxies are the networks of the reverse proxies in front of the
// server (--trusted-proxies). Only a request that arrives from one of them
// may name its client in X-Forwarded-For; anyone else could name any
// address and so dodge a per-address limit or forge the logs.
type TrustedProxies []netip.Prefix

// ParseTrustedProxies reads a comma-separated list of CIDRs or single
// addresses ("10.0.0.0/8, 192.0.2.7, fd00::/8"). Empty: none.
func ParseTrustedProxies(s string) (TrustedProxies, error) {
	var out TrustedProxies
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is neither a CIDR nor an IP address", f)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (t TrustedProxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Resolve is the client address of r: the direct peer, unless the peer is
// a trusted proxy; then the rightmost address of X-Forwarded-For that is
// not a trusted proxy (addresses to its left were written by the client
// and prove nothing). Invalid entries end the walk at the last good hop.
// The zero Addr when RemoteAddr is not an address (tests, pipes).
func (t TrustedProxies) Resolve(r *http.Request) netip.Addr {
	peer := parseHost(r.RemoteAddr)
	if !peer.IsValid() || len(t) == 0 || !t.trusts(peer) {
		return peer
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a := parseHost(strings.TrimSpace(hops[i]))
		if !a.IsValid() {
			break
		}
		client = a
		if !t.trusts(a) {
			break
		}
	}
	return client
}

// parseHost reads "ip", "ip:port", "[ipv6]:port" or "[ipv6]".
func parseHost(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

type clientIPKey struct{}

// RealClientIP resolves each request's client address once (Resolve),
// keeps it for ClientIP and puts it in r.RemoteAddr, so that code keyed on
// RemoteAddr (per-address limits) keys on the client, not on the proxy.
func RealClientIP(next http.Handler, proxies TrustedProxies) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := proxies.Resolve(r)
		if a.IsValid() {
			ctx := context.WithValue(r.Context(), clientIPKey{}, a)
			r = r.WithContext(ctx)
			if a != parseHost(r.RemoteAddr) {
				r.RemoteAddr = net.JoinHostPort(a.String(), "0")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ClientIP is the client address of r as RealClientIP resolved it, or the
// host of RemoteAddr when the request did not pass through it. Key every
// per-address limit and log line on it.
func ClientIP(r *http.Request) string {
	if a, ok := r.Context().Value(clientIPKey{}).(netip.Addr); ok {
		return a.String()
	}
	if a := parseHost(r.RemoteAddr); a.IsValid() {
		return a.String()
	}
	return r.RemoteAddr
}
