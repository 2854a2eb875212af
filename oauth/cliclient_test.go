package oauth_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/oauth"
)

// TestCLIClientRESTToken: the pre-registered CLI client authorizes with a
// loopback redirect on any port for the REST resource; the token verifies
// for {api_url}/api/v1 only, with the scopes granted, until it expires.
func TestCLIClientRESTToken(t *testing.T) {
	c := &clock{t: time.Now().UTC()}
	h := newHarness(t, func(o *oauth.Options) { o.Now = c.now })
	rest := h.base + oauth.RESTResourcePath

	var prm oauth.ProtectedResourceMetadata
	if res := h.getJSON(h.base+oauth.PathProtectedResourceAPI, &prm); res.StatusCode != http.StatusOK || prm.Resource != rest ||
		!slices.Equal(prm.AuthorizationServers, []string{h.srv.Issuer()}) {
		t.Fatalf("REST resource metadata: %d %+v", res.StatusCode, prm)
	}
	if u, err := h.srv.ResourceMetadataURL(oauth.RESTResourcePath); err != nil || u != h.base+oauth.PathProtectedResourceAPI {
		t.Fatalf("ResourceMetadataURL = %q, %v", u, err)
	}

	for _, port := range []string{"54321", "8080"} {
		a := h.authRequest(oauth.CLIClientID, []string{"fax:read", "offline_access"})
		redirect := "http://127.0.0.1:" + port + "/callback"
		a.cfg.RedirectURL = redirect
		a.url = a.cfg.AuthCodeURL(a.state, oauth2.S256ChallengeOption(a.verifier), oauth2.SetAuthURLParam("resource", rest))
		cookie := h.cookie(h.env.OwnerA)
		id, ret := h.consent(a, cookie)
		if ap, err := h.env.Svc.Approvals.Get(context.Background(), h.env.OwnerA.ID, id); err != nil || !strings.Contains(ap.Summary, oauth.CLIClientName) {
			t.Fatalf("consent approval %+v, %v: should name the CLI", ap, err)
		}
		h.decide(h.env.OwnerA, id, true, nil)
		code, loc, body := h.browse(ret, cookie)
		if code != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.String(), redirect+"?") {
			t.Fatalf("resume: %d %v %s, want the loopback redirect on port %s", code, loc, body, port)
		}
		tok, err := a.cfg.Exchange(context.Background(), loc.Query().Get("code"), oauth2.VerifierOption(a.verifier), oauth2.SetAuthURLParam("resource", rest))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		p, err := h.srv.VerifyAccessToken(context.Background(), tok.AccessToken, rest)
		if err != nil || p.Audience != rest || !slices.Equal(p.Scopes, []core.Scope{core.ScopeFaxRead}) || p.ClientID != oauth.CLIClientID {
			t.Fatalf("REST token: %+v, %v", p, err)
		}
		// Another resource's audience is refused.
		if _, err := h.srv.VerifyAccessToken(context.Background(), tok.AccessToken, h.mcp()); core.ErrorCode(err) != core.CodeInvalidToken {
			t.Fatalf("REST token for /mcp: %v, want invalid_token", err)
		}
		// Past its expiry (fosite stamps it by the wall clock at issue;
		// the client's expiry is computed after that) it is refused.
		before := c.now()
		c.add(tok.Expiry.Sub(before) + time.Second)
		if _, err := h.srv.VerifyAccessToken(context.Background(), tok.AccessToken, rest); core.ErrorCode(err) != core.CodeInvalidToken {
			t.Fatalf("expired REST token: %v, want invalid_token", err)
		}
		// Back for the next round.
		c.add(before.Sub(c.now()))
	}

	// The client is not the caller's to choose a redirect for: another
	// host is refused before the owner is asked.
	a := h.authRequest(oauth.CLIClientID, []string{"fax:read"})
	a.cfg.RedirectURL = "http://evil.example/callback"
	code, loc, _ := h.browse(a.cfg.AuthCodeURL(a.state, oauth2.S256ChallengeOption(a.verifier), oauth2.SetAuthURLParam("resource", rest)), h.cookie(h.env.OwnerA))
	if code == http.StatusSeeOther && loc != nil && loc.Host == "evil.example" {
		t.Fatalf("authorize redirected to an unregistered redirect URI: %v", loc)
	}
}
