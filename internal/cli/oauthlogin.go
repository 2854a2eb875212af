package cli

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// The CLI is faxhub's pre-registered public client (docs/cli.md says why
// it is not registered dynamically); the server's oauth.CLIClientID.
const (
	cliClientID = "faxhub-cli"
	// defaultScopes are what `faxhub login` asks for: everything the client
	// commands use, and a refresh token.
	defaultScopes = "fax:read fax:draft fax:send inbox:read credits:read offline_access"
	// loginTimeout bounds the wait for the browser.
	loginTimeout = 10 * time.Minute
	// maxDiscoveryBytes bounds a metadata document.
	maxDiscoveryBytes = 64 << 10
	// restResourcePath is the REST API's resource (RFC 8707) on the API URL.
	restResourcePath = "/api/v1"
)

// OAuthToken is a profile's OAuth credential: the tokens and where to
// refresh and revoke them (discovered at login).
type OAuthToken struct {
	AccessToken   string    `json:"accessToken"`
	RefreshToken  string    `json:"refreshToken,omitempty"`
	Expiry        time.Time `json:"expiry"`
	Scope         string    `json:"scope,omitempty"`
	ClientID      string    `json:"clientId"`
	Resource      string    `json:"resource"`
	TokenURL      string    `json:"tokenUrl"`
	RevocationURL string    `json:"revocationUrl,omitempty"`
}

// asMetadata is what login uses of the RFC 8414 document.
type asMetadata struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	RevocationEndpoint    string `json:"revocation_endpoint"`
}

// discover follows the API's RFC 9728 document to its authorization
// server's RFC 8414 metadata.
func (s *state) discover(ctx context.Context, apiURL string) (resource string, md asMetadata, err error) {
	resource = apiURL + restResourcePath
	u, _ := url.Parse(apiURL)
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := s.getJSON(ctx, u.Scheme+"://"+u.Host+"/.well-known/oauth-protected-resource"+u.Path+restResourcePath, &prm); err != nil {
		return "", md, err
	}
	if prm.Resource != resource || len(prm.AuthorizationServers) == 0 {
		return "", md, fmt.Errorf("%s does not describe itself as an OAuth protected resource (resource %q)", resource, prm.Resource)
	}
	issuer := prm.AuthorizationServers[0]
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" {
		return "", md, fmt.Errorf("the authorization server %q is not a URL", issuer)
	}
	if err := s.getJSON(ctx, iu.Scheme+"://"+iu.Host+"/.well-known/oauth-authorization-server"+iu.Path, &md); err != nil {
		return "", md, err
	}
	if md.Issuer != issuer || md.AuthorizationEndpoint == "" || md.TokenEndpoint == "" {
		return "", md, fmt.Errorf("the authorization server metadata of %s is incomplete or names another issuer", issuer)
	}
	return resource, md, nil
}

func (s *state) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	res, err := s.env.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s (does this faxhub support OAuth login? use --api-key)", u, res.Status)
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, maxDiscoveryBytes)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// oauthLogin runs the authorization code flow with PKCE S256 through a
// loopback redirect (RFC 8252): a listener on 127.0.0.1:0, the browser
// (or the printed URL) to the authorization endpoint, the code back on
// /callback with our state and the server's iss, then the exchange.
func (s *state) oauthLogin(ctx context.Context, apiURL, scopes string, openBrowser bool) (*OAuthToken, error) {
	resource, md, err := s.discover(ctx, apiURL)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the browser's redirect: %w", err)
	}
	defer ln.Close()
	cfg := &oauth2.Config{
		ClientID: cliClientID, Scopes: strings.Fields(scopes),
		Endpoint:    oauth2.Endpoint{AuthURL: md.AuthorizationEndpoint, TokenURL: md.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: fmt.Sprintf("http://%s/callback", ln.Addr()),
	}
	state := randomString()
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource))

	got := make(chan callback, 1)
	srv := &http.Server{Handler: callbackHandler(state, md.Issuer, got), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	fmt.Fprintf(s.env.Stderr, "Open this URL to sign in and approve the faxhub CLI:\n\n  %s\n\n", authURL)
	if openBrowser && s.env.OpenBrowser != nil {
		if err := s.env.OpenBrowser(authURL); err != nil {
			fmt.Fprintf(s.env.Stderr, "(the browser could not be opened: %v; open the URL yourself)\n", err)
		}
	}
	var cb callback
	select {
	case cb = <-got: // already there (a browser that answered at once)
	default:
		cb, err = s.awaitCallback(ctx, got)
		if err != nil {
			return nil, err
		}
	}
	if cb.err != "" {
		return nil, authErr{"the authorization was refused: " + cb.err}
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, s.env.HTTP), cb.code,
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		return nil, authErr{"the code could not be exchanged for a token: " + err.Error()}
	}
	scope, _ := tok.Extra("scope").(string)
	return &OAuthToken{
		AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, Scope: scope,
		ClientID: cliClientID, Resource: resource, TokenURL: md.TokenEndpoint, RevocationURL: md.RevocationEndpoint,
	}, nil
}

// awaitCallback waits for the browser, at most loginTimeout.
func (s *state) awaitCallback(ctx context.Context, got <-chan callback) (callback, error) {
	select {
	case cb := <-got:
		return cb, nil
	case <-s.env.After(loginTimeout):
		return callback{}, authErr{"no answer from the browser within " + loginTimeout.String() + "; run faxhub login again"}
	case <-ctx.Done():
		return callback{}, ctx.Err()
	}
}

// callback is what the browser brought back: a code, or an error.
type callback struct{ code, err string }

// callbackHandler takes the first redirect carrying our state (and the
// issuer we asked, RFC 9207: a mix-up defence) and answers the browser.
// Anything else gets a 400 and is not taken. The loopback listener has one
// path, so it is one handler, not a route table.
func callbackHandler(state, issuer string, got chan<- callback) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
			http.Error(w, "This is not the sign-in faxhub login is waiting for.", http.StatusBadRequest)
			return
		}
		if iss := q.Get("iss"); iss != "" && iss != issuer {
			http.Error(w, "The answer came from another authorization server.", http.StatusBadRequest)
			return
		}
		cb := callback{code: q.Get("code")}
		if e := q.Get("error"); e != "" || cb.code == "" {
			cb = callback{err: strings.TrimSpace(e + ": " + q.Get("error_description"))}
		}
		select {
		case got <- cb:
		default: // a second redirect: the first one counts
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if cb.err != "" {
			fmt.Fprintln(w, "faxhub login was not approved; you can close this tab.")
			return
		}
		fmt.Fprintln(w, "faxhub login is approved; you can close this tab and return to the terminal.")
	})
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// refreshMargin refreshes a token this long before it expires, so a
// request does not carry one that expires on the way.
const refreshMargin = 30 * time.Second

// oauthTokenSource is the profile's access token, refreshed when it is
// about to expire (by the injected clock) and stored again (0600, atomic)
// because refresh tokens rotate: the old one stops working.
func (s *state) oauthTokenSource(name string) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		cf, err := s.loadConfig()
		if err != nil {
			return "", err
		}
		p := cf.Profiles[name]
		t := p.OAuth
		if t == nil {
			return "", authErr{"the profile holds no OAuth token; run faxhub login"}
		}
		if s.now().Add(refreshMargin).Before(t.Expiry) {
			return t.AccessToken, nil
		}
		if t.RefreshToken == "" {
			return "", authErr{"the access token expired and there is no refresh token; run faxhub login"}
		}
		cfg := &oauth2.Config{ClientID: t.ClientID, Endpoint: oauth2.Endpoint{TokenURL: t.TokenURL, AuthStyle: oauth2.AuthStyleInParams}}
		nt, err := cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, s.env.HTTP), &oauth2.Token{RefreshToken: t.RefreshToken}).Token()
		if err != nil {
			var re *oauth2.RetrieveError
			if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
				return "", authErr{"the login has expired or was revoked; run faxhub login"}
			}
			return "", fmt.Errorf("refresh the access token: %w", err)
		}
		t.AccessToken, t.Expiry = nt.AccessToken, nt.Expiry
		if nt.RefreshToken != "" {
			t.RefreshToken = nt.RefreshToken
		}
		if sc, _ := nt.Extra("scope").(string); sc != "" {
			t.Scope = sc
		}
		p.OAuth = t
		cf.Profiles[name] = p
		if err := s.saveConfig(cf); err != nil {
			return "", err
		}
		return t.AccessToken, nil
	}
}

// revoke revokes the profile's refresh token (RFC 7009), which ends the
// whole authorization on faxhub (its access tokens too).
func (s *state) revoke(ctx context.Context, t *OAuthToken) error {
	if t.RevocationURL == "" {
		return nil
	}
	tok, hint := t.RefreshToken, "refresh_token"
	if tok == "" {
		tok, hint = t.AccessToken, "access_token"
	}
	form := url.Values{"token": {tok}, "token_type_hint": {hint}, "client_id": {t.ClientID}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.RevocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := s.env.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxDiscoveryBytes))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("revoke: %s", res.Status)
	}
	return nil
}
