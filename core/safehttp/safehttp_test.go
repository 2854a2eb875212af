package safehttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/egress"
	"github.com/faxhub/faxhub/core/safehttp"
	"github.com/faxhub/faxhub/internal/dnstest"
)

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
	get := func(p egress.Policy, host string) error {
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
		policy egress.Policy
		host   string
		ok     bool
	}{
		{"a name resolving to loopback, not allowed", egress.Policy{}, "receiver.example", false},
		{"a name resolving to loopback, loopback allowed", egress.Policy{AllowLoopback: true}, "receiver.example", true},
		{"a loopback literal, not allowed", egress.Policy{}, "127.0.0.1", false},
		{"a name resolving to the metadata service, private allowed", egress.Policy{AllowPrivate: true}, "metadata.example", false},
		{"a name resolving to the metadata service", egress.Policy{}, "metadata.example", false},
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
			if !errors.Is(err, egress.ErrForbiddenAddress) {
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
	if err := get(egress.Policy{}, "rebinding.example"); err == nil {
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
	c := safehttp.NewClient(safehttp.Options{Policy: egress.Policy{AllowLoopback: true}, Timeout: 2 * time.Second})
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
