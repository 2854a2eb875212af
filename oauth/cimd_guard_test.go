package oauth_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
)

// docServer serves one good client ID metadata document at /ok.json and
// 404 elsewhere, counting requests per path.
type docServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newDocServer(t *testing.T) *docServer {
	d := &docServer{hits: map[string]int{}}
	d.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.hits[r.URL.Path]++
		d.mu.Unlock()
		if r.URL.Path != "/ok.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"client_id":"` + d.URL + `/ok.json","client_name":"Doc App","redirect_uris":["` + redirectURI + `"]}`))
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *docServer) count(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[path]
}

func newCIMDHarness(t *testing.T, d *docServer, mod func(*oauth.Options), envOpts ...testenv.Option) *agentHarness {
	c := &clock{t: time.Now().UTC()}
	h := newHarness(t, func(o *oauth.Options) {
		o.Now, o.HTTPClient = c.now, d.Client()
		if mod != nil {
			mod(o)
		}
	}, append([]testenv.Option{testenv.WithConfig(func(cfg *services.Config) { cfg.Now = c.now })}, envOpts...)...)
	return &agentHarness{harness: h, clock: c}
}

// authorizeWith starts an authorization for a metadata document client_id
// with owner A's session; it returns the status and body.
func (h *agentHarness) authorizeWith(clientID string) (int, http.Header, string) {
	h.t.Helper()
	a := h.authRequest(clientID, []string{"fax:read"})
	req, _ := http.NewRequest(http.MethodGet, a.url, nil)
	req.Header.Set("Cookie", h.cookie(h.env.OwnerA))
	resp, err := h.noRedirect.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestMetadataDocumentNegativeCache: a failed fetch is not repeated for
// five minutes. Before, every authorization request for the same broken
// URL fetched it again.
func TestMetadataDocumentNegativeCache(t *testing.T) {
	d := newDocServer(t)
	h := newCIMDHarness(t, d, nil)
	missing := d.URL + "/missing.json"
	for i := range 3 {
		code, _, body := h.authorizeWith(missing)
		if code < 400 || code >= 500 || !strings.Contains(body, "invalid_client") {
			t.Fatalf("request %d: %d %s, want invalid_client", i, code, body)
		}
	}
	if n := d.count("/missing.json"); n != 1 {
		t.Fatalf("the failing document was fetched %d times, want once", n)
	}
	h.clock.add(5*time.Minute - time.Second)
	h.authorizeWith(missing)
	if n := d.count("/missing.json"); n != 1 {
		t.Fatalf("fetched again within the negative-cache window (%d fetches)", n)
	}
	h.clock.add(2 * time.Second)
	h.authorizeWith(missing)
	if n := d.count("/missing.json"); n != 2 {
		t.Fatalf("after the window: %d fetches, want 2", n)
	}
	// A good document is unaffected and cached (five minutes) as before.
	for range 2 {
		if code, _, body := h.authorizeWith(d.URL + "/ok.json"); code != http.StatusSeeOther {
			t.Fatalf("good document: %d %s", code, body)
		}
	}
	if n := d.count("/ok.json"); n != 1 {
		t.Fatalf("good document fetched %d times, want once", n)
	}
}

// TestMetadataDocumentFetchRateLimit: at most 10 fetches at once per client
// IP, then one every 6 s; the 11th answers 429 temporarily_unavailable with
// Retry-After and fetches nothing. Before, every distinct URL was fetched.
func TestMetadataDocumentFetchRateLimit(t *testing.T) {
	d := newDocServer(t)
	h := newCIMDHarness(t, d, nil)
	for i := range 10 {
		code, _, body := h.authorizeWith(d.URL + "/m" + strconv.Itoa(i) + ".json")
		if code < 400 || code >= 500 || !strings.Contains(body, "invalid_client") {
			t.Fatalf("fetch %d: %d %s", i, code, body)
		}
	}
	code, hdr, body := h.authorizeWith(d.URL + "/m10.json")
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || !strings.Contains(body, "temporarily_unavailable") {
		t.Fatalf("11th fetch: %d Retry-After %q %s", code, hdr.Get("Retry-After"), body)
	}
	if n := d.count("/m10.json"); n != 0 {
		t.Fatalf("the rate-limited document was fetched (%d)", n)
	}
	h.clock.add(6 * time.Second)
	if code, _, _ := h.authorizeWith(d.URL + "/m10.json"); code == http.StatusTooManyRequests || d.count("/m10.json") != 1 {
		t.Fatalf("after 6 s: %d, %d fetches", code, d.count("/m10.json"))
	}
}

// TestMetadataDocumentStaleWhileLimited: when the IP may not fetch, a
// document fetched before (older than the cache TTL) is still used.
func TestMetadataDocumentStaleWhileLimited(t *testing.T) {
	d := newDocServer(t)
	h := newCIMDHarness(t, d, nil, testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitOAuthMetadataFetch, core.Rate{Interval: time.Hour, Burst: 2})
	}))
	ok := d.URL + "/ok.json"
	if code, _, body := h.authorizeWith(ok); code != http.StatusSeeOther {
		t.Fatalf("first: %d %s", code, body)
	}
	h.authorizeWith(d.URL + "/a.json")
	if code, _, _ := h.authorizeWith(d.URL + "/b.json"); code != http.StatusTooManyRequests {
		t.Fatalf("third fetch: %d, want 429", code)
	}
	h.clock.add(6 * time.Minute)
	if code, _, body := h.authorizeWith(ok); code != http.StatusSeeOther || d.count("/ok.json") != 1 {
		t.Fatalf("stale document while limited: %d %s (%d fetches)", code, body, d.count("/ok.json"))
	}
}
