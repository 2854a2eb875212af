// Package safehttp is the outbound HTTP client of every fetch or delivery
// to a URL someone else chose: client ID metadata documents (oauth) and
// webhook endpoints (core/webhooks/httpsender). Such a URL must not turn
// faxhub into a proxy into its own network (SSRF), so the client
//
//   - dials only addresses its Policy allows, checked on each address
//     actually dialed, after DNS resolution: a name that resolves to a
//     public address when it is checked and to 127.0.0.1 when it is
//     fetched (DNS rebinding) is still refused;
//   - never follows a redirect (the caller sees the 3xx), so a public
//     endpoint cannot bounce the request to a private one;
//   - never uses a proxy from the environment, and bounds the time and the
//     size of the answer's headers.
package safehttp

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/faxhub/faxhub/core/egress"
)

// Options configure a client.
type Options struct {
	Policy egress.Policy
	// Timeout bounds a whole exchange, the body's read included (the
	// caller reads it within the request's context).
	Timeout time.Duration
	// MaxResponseHeaderBytes bounds the answer's headers (default 16 KiB).
	MaxResponseHeaderBytes int64
	// Resolver resolves names (default net.DefaultResolver); tests point
	// it at their own DNS server.
	Resolver *net.Resolver
	// MaxConnsPerHost bounds connections to one host (0: unbounded);
	// MaxIdleConnsPerHost how many are kept open for the next request
	// (default 4): a sender with many requests in flight to one host keeps
	// as many, rather than dialing again each time.
	MaxConnsPerHost     int
	MaxIdleConnsPerHost int
}

// NewClient returns an http.Client that dials only what o.Policy allows
// and never follows redirects.
func NewClient(o Options) *http.Client {
	if o.MaxResponseHeaderBytes <= 0 {
		o.MaxResponseHeaderBytes = 16 << 10
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = 4
	}
	policy := o.Policy
	d := &net.Dialer{
		Timeout:  o.Timeout,
		Resolver: o.Resolver,
		// Control runs on each address the dialer connects to, after the
		// name was resolved: the check cannot be raced by DNS.
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s is not an address", egress.ErrForbiddenAddress, address)
			}
			return policy.Check(ap.Addr())
		},
	}
	return &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            d.DialContext,
			TLSHandshakeTimeout:    o.Timeout,
			ResponseHeaderTimeout:  o.Timeout,
			MaxResponseHeaderBytes: o.MaxResponseHeaderBytes,
			MaxIdleConns:           256,
			MaxIdleConnsPerHost:    o.MaxIdleConnsPerHost,
			MaxConnsPerHost:        o.MaxConnsPerHost,
			IdleConnTimeout:        90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
