package web_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/faxhub/faxhub/core/web"
)

func TestClientIP(t *testing.T) {
	proxies, err := web.ParseTrustedProxies("10.0.0.0/8, 192.0.2.7 ,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		proxies web.TrustedProxies
		peer    string
		xff     []string
		want    string
	}{
		{"no proxies trusted: XFF ignored", nil, "203.0.113.5:4000", []string{"1.2.3.4"}, "203.0.113.5"},
		{"untrusted peer: XFF ignored", proxies, "203.0.113.5:4000", []string{"1.2.3.4"}, "203.0.113.5"},
		{"trusted peer, one hop", proxies, "10.1.2.3:4000", []string{"198.51.100.9"}, "198.51.100.9"},
		{"client-written entries to the left are skipped", proxies, "10.1.2.3:4000", []string{"6.6.6.6, 198.51.100.9"}, "198.51.100.9"},
		{"trusted hops are walked over", proxies, "192.0.2.7:80", []string{"198.51.100.9, 10.9.9.9", "10.0.0.1"}, "198.51.100.9"},
		{"all hops trusted: the leftmost", proxies, "10.1.2.3:4000", []string{"10.2.2.2, 10.3.3.3"}, "10.2.2.2"},
		{"garbage ends the walk at the last good hop", proxies, "10.1.2.3:4000", []string{"198.51.100.9, nonsense, 10.3.3.3"}, "10.3.3.3"},
		{"trusted peer without XFF", proxies, "10.1.2.3:4000", nil, "10.1.2.3"},
		{"IPv6 peer and hop", proxies, "[fd00::1]:443", []string{"2001:db8::5"}, "2001:db8::5"},
		{"4in6 peer", proxies, "[::ffff:10.1.2.3]:443", []string{"198.51.100.9"}, "198.51.100.9"},
		{"hop with port", proxies, "10.1.2.3:4000", []string{"198.51.100.9:5555"}, "198.51.100.9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = c.peer
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			var got, remote string
			web.RealClientIP(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got, remote = web.ClientIP(r), r.RemoteAddr
			}), c.proxies).ServeHTTP(httptest.NewRecorder(), r)
			if got != c.want {
				t.Fatalf("ClientIP %q, want %q", got, c.want)
			}
			if host := web.ClientIP(httptest.NewRequest("GET", "/", nil)); host != "192.0.2.1" {
				t.Fatalf("without the middleware: %q", host) // httptest's RemoteAddr
			}
			// Code keyed on RemoteAddr keys on the client too.
			if host, _, err := net.SplitHostPort(remote); err != nil || host != c.want {
				t.Fatalf("RemoteAddr %q, want the host %q", remote, c.want)
			}
		})
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0"} {
		if _, err := web.ParseTrustedProxies(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if p, err := web.ParseTrustedProxies(" "); err != nil || len(p) != 0 {
		t.Errorf("empty: %v %v", p, err)
	}
}
