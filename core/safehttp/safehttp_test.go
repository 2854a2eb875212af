package safehttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/safehttp"
	"github.com/faxhub/faxhub/internal/dnstest"
)

// TestPolicy: which addresses each policy dials. Metadata services and
// unusable addresses are refused whatever the operator allows.
func TestPolicy(t *testing.T) {
	none, loop, private := safehttp.Policy{}, safehttp.Policy{AllowLoopback: true}, safehttp.Policy{AllowPrivate: true}
	for _, tc := range []struct {
		addr                string
		none, loop, private bool
	}{
		{"93.184.215.14", true, true, true},
		{"2606:4700::6810:85e5", true, true, true},
		{"127.0.0.1", false, true, true},
		{"127.9.9.9", false, true, true},
		{"::1", false, true, true},
		{"::ffff:127.0.0.1", false, true, true},
		{"10.0.0.5", false, false, true},
		{"172.16.3.4", false, false, true},
		{"192.168.1.1", false, false, true},
		{"100.64.0.1", false, false, true},
		{"169.254.10.10", false, false, true},
		{"fe80::1", false, false, true},
		{"fd12:3456::1", false, false, true},
		{"192.0.2.1", false, false, true},
		{"2001:db8::1", false, false, true},
		{"64:ff9b::a00:1", false, false, true},
		{"2002:7f00:1::", false, false, true},
		// Never, whatever is allowed.
		{"169.254.169.254", false, false, false},
		{"::ffff:169.254.169.254", false, false, false},
		{"169.254.170.2", false, false, false},
		{"fd00:ec2::254", false, false, false},
		{"100.100.100.200", false, false, false},
		{"192.0.0.192", false, false, false},
		{"0.0.0.0", false, false, false},
		{"0.1.2.3", false, false, false},
		{"::", false, false, false},
		{"255.255.255.255", false, false, false},
		{"240.1.1.1", false, false, false},
		{"224.0.0.1", false, false, false},
		{"ff02::1", false, false, false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tc.addr)
			for _, c := range []struct {
				name string
				p    safehttp.Policy
				want bool
			}{{"none", none, tc.none}, {"loopback", loop, tc.loop}, {"private", private, tc.private}} {
				err := c.p.Check(a)
				if got := err == nil; got != c.want {
					t.Errorf("%s policy: allowed %v, want %v (%v)", c.name, got, c.want, err)
				}
				if err != nil && !errors.Is(err, safehttp.ErrForbiddenAddress) {
					t.Errorf("%s policy: %v does not wrap ErrForbiddenAddress", c.name, err)
				}
				if err != nil && strings.Contains(err.Error(), tc.addr) {
					t.Errorf("%s policy: the refusal names the address: %v", c.name, err)
				}
			}
		})
	}
}

// TestDialTimeGuard: the address is checked when it is dialed, after the
// name is resolved: a name resolving to loopback or to the metadata
// service is refused before any connection, whatever the URL looked like.
func TestDialTimeGuard(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.Listener.Addr().(interface{ String() string }).String()
	_, port, _ = strings.Cut(port, ":")
	dns := dnstest.New(t, map[string][]string{
		"receiver.example":  {"127.0.0.1"},
		"metadata.example":  {"169.254.169.254"},
		"rebinding.example": {"93.184.215.14", "127.0.0.1"},
	})
	get := func(p safehttp.Policy, host string) error {
		c := safehttp.NewClient(safehttp.Options{Policy: p, Timeout: 2 * time.Second, Resolver: dns.Resolver()})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+":"+port+"/", nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, tc := range []struct {
		name   string
		policy safehttp.Policy
		host   string
		ok     bool
	}{
		{"a name resolving to loopback, not allowed", safehttp.Policy{}, "receiver.example", false},
		{"a name resolving to loopback, loopback allowed", safehttp.Policy{AllowLoopback: true}, "receiver.example", true},
		{"a loopback literal, not allowed", safehttp.Policy{}, "127.0.0.1", false},
		{"a name resolving to the metadata service, private allowed", safehttp.Policy{AllowPrivate: true}, "metadata.example", false},
		{"a name resolving to the metadata service", safehttp.Policy{}, "metadata.example", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := hits.Load()
			err := get(tc.policy, tc.host)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, safehttp.ErrForbiddenAddress) {
				t.Fatalf("got %v, want a refusal at dial time", err)
			}
			if hits.Load() != before {
				t.Fatal("the refused request reached the server")
			}
		})
	}
	// A name with a public and a loopback address: the dialer may try
	// both, and neither reaches the loopback server.
	before := hits.Load()
	if err := get(safehttp.Policy{}, "rebinding.example"); err == nil {
		t.Fatal("a name with a loopback address reached it")
	}
	if hits.Load() != before {
		t.Fatal("the loopback address was dialed")
	}
}

// TestRedirectsAreNotFollowed: a 3xx is the answer; its Location, here a
// private address, is never requested.
func TestRedirectsAreNotFollowed(t *testing.T) {
	var inner atomic.Int32
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { inner.Add(1) }))
	defer private.Close()
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, private.URL+"/admin", http.StatusFound)
	}))
	defer public.Close()
	c := safehttp.NewClient(safehttp.Options{Policy: safehttp.Policy{AllowLoopback: true}, Timeout: 2 * time.Second})
	resp, err := c.Get(public.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("status %d, want the 302 itself", resp.StatusCode)
	}
	if loc, _ := url.Parse(resp.Header.Get("Location")); loc == nil || loc.Path != "/admin" {
		t.Fatalf("Location %q", resp.Header.Get("Location"))
	}
	if inner.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
}
