package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/cli"
	"github.com/faxhub/faxhub/internal/testenv"
)

// browser plays the owner's browser during faxhub login: signed in (a
// session made as the console's sign-in makes one), it follows the
// authorization URL to the consent page, approves, and follows the
// redirect to the CLI's loopback listener.
type browser struct {
	t       *testing.T
	r       *rig
	session string
	// approvals counts consent pages approved.
	approvals int
}

func (b *browser) do(method, u string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.r.env.Svc.Config().BaseURL)
	}
	req.AddCookie(&http.Cookie{Name: web.SessionCookieName, Value: b.session})
	hc := &http.Client{Transport: b.r.http.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := hc.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body)
	return res, string(got)
}

func (b *browser) open(authURL string) error {
	b.t.Helper()
	res, _ := b.do("GET", authURL, nil)
	if res.StatusCode != http.StatusSeeOther {
		b.t.Errorf("authorize: %d", res.StatusCode)
		return nil
	}
	consent, err := res.Location()
	if err != nil || !strings.HasPrefix(consent.Path, "/console/approvals/") {
		b.t.Errorf("authorize redirects to %v, want the consent page", consent)
		return nil
	}
	_, page := b.do("GET", consent.String(), nil)
	if !strings.Contains(page, "faxhub command-line client") {
		b.t.Errorf("the consent page does not name the CLI:\n%s", page)
	}
	field := func(name string) string {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page)
		if m == nil {
			b.t.Fatalf("consent form lacks %s", name)
		}
		return html.UnescapeString(m[1])
	}
	csrf := regexp.MustCompile(`<meta name="csrf-token" content="([^"]*)"`).FindStringSubmatch(page)
	if csrf == nil {
		b.t.Fatalf("no form token on the consent page")
	}
	form := url.Values{"csrf": {html.UnescapeString(csrf[1])}, "decision": {"approve"}, "return": {field("return")}, "binding": {field("binding")}}
	for _, m := range regexp.MustCompile(`name="scope" value="([^"]*)" checked`).FindAllStringSubmatch(page, -1) {
		form.Add("scope", m[1])
	}
	res, _ = b.do("POST", consent.Scheme+"://"+consent.Host+consent.Path, form)
	if res.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("approve: %d", res.StatusCode)
	}
	b.approvals++
	res, _ = b.do("GET", b.r.env.Svc.Config().APIURL+form.Get("return"), nil)
	cb, err := res.Location()
	if err != nil || cb.Hostname() != "127.0.0.1" {
		b.t.Fatalf("resume redirects to %v, want the CLI's listener", cb)
	}
	// The loopback listener is real: the CLI is waiting on it.
	got, err := http.Get(cb.String())
	if err != nil {
		b.t.Fatal(err)
	}
	got.Body.Close()
	if got.StatusCode != http.StatusOK {
		b.t.Errorf("the CLI's callback answered %d", got.StatusCode)
	}
	return nil
}

func (r *rig) runWith(now func() time.Time, open func(string) error, args ...string) result {
	r.t.Helper()
	var out, errb strings.Builder
	code := cli.Run(context.Background(), args, cli.Env{
		Stdin: strings.NewReader(r.stdin), Stdout: &out, Stderr: &errb,
		Getenv:    func(k string) string { return r.vars[k] },
		ConfigDir: func() (string, error) { return r.config, nil },
		HTTP:      r.http, Terminal: func(io.Writer) bool { return false }, After: r.after,
		Now: now, OpenBrowser: open,
	})
	return result{code, out.String(), errb.String()}
}

type storedProfile struct {
	APIURL string
	OAuth  *struct {
		AccessToken, RefreshToken, Scope, TokenURL, RevocationURL string
		Expiry                                                    time.Time
	}
}

func (r *rig) profile(t *testing.T) storedProfile {
	t.Helper()
	path := filepath.Join(r.config, "faxhub", "config.json")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	var cf struct{ Profiles map[string]storedProfile }
	if err := json.Unmarshal(b, &cf); err != nil {
		t.Fatal(err)
	}
	return cf.Profiles["default"]
}

// TestOAuthLogin is faxhub login end to end: PKCE through the loopback
// redirect with the owner approving in the console, a fax sent and
// followed to delivered with the stored token, a refresh once the
// (injected) clock says the token expired, a narrower login refused where
// its scope does not reach, and logout revoking the login.
func TestOAuthLogin(t *testing.T) {
	// OAuth tokens act in the agent mode: test, where the simulated
	// provider delivers.
	r := newRig(t, testenv.WithMCPOAuth(), testenv.WithConfig(func(c *services.Config) { c.AgentMode = core.ModeTest }))
	delete(r.vars, "FAXHUB_API_KEY")
	secret, _, err := r.env.Svc.Accounts.CreateSession(context.Background(), r.env.OwnerA.ID, "test browser")
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, r: r, session: secret}
	clock := time.Now()
	now := func() time.Time { return clock }

	if res := r.run("credits"); res.code != cli.ExitAuth {
		t.Fatalf("credits before login: exit %d, want %d (%s)", res.code, cli.ExitAuth, res.stderr)
	}
	res := r.runWith(now, b.open, "login")
	res.ok(t)
	if b.approvals != 1 || !strings.Contains(res.stderr, "/api/auth/oauth2/authorize?") || !strings.Contains(res.stderr, "code_challenge_method=S256") {
		t.Fatalf("login: approvals %d, stderr %q", b.approvals, res.stderr)
	}
	p := r.profile(t)
	if p.OAuth == nil || p.OAuth.AccessToken == "" || p.OAuth.RefreshToken == "" || !strings.Contains(p.OAuth.Scope, "fax:send") {
		t.Fatalf("stored profile %+v", p)
	}
	first := p.OAuth.AccessToken

	// The token works on REST: a fax to delivered.
	send := r.runWith(now, nil, "fax", "send", writePDF(t, 1), "--to", deliverable, "--watch", "--json")
	send.ok(t)
	var f fax
	send.json(t, &f)
	if f.Status != "delivered" {
		t.Fatalf("fax %+v, want delivered", f)
	}

	// A REST token is refused by the MCP server (another audience).
	req, _ := http.NewRequest("POST", r.env.Svc.Config().BaseURL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+first)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	mres, err := r.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	mres.Body.Close()
	if mres.StatusCode != http.StatusUnauthorized {
		t.Errorf("REST token on /mcp: %d, want 401", mres.StatusCode)
	}

	// Two hours later by the CLI's clock: the token is refreshed (the
	// refresh token rotates) and stored again.
	clock = clock.Add(2 * time.Hour)
	r.runWith(now, nil, "credits").ok(t)
	p2 := r.profile(t)
	if p2.OAuth.AccessToken == first || p2.OAuth.RefreshToken == p.OAuth.RefreshToken {
		t.Fatalf("no refresh: %+v", p2.OAuth)
	}
	// The rotation retired the first access token.
	if code := restStatus(t, r, first); code != http.StatusUnauthorized {
		t.Errorf("the first access token after refresh: %d, want 401", code)
	}

	// Logout revokes: the stored token stops working and the profile goes.
	revokedTok := p2.OAuth.AccessToken
	r.runWith(now, nil, "logout").ok(t)
	if code := restStatus(t, r, revokedTok); code != http.StatusUnauthorized {
		t.Errorf("the access token after logout: %d, want 401", code)
	}
	if res := r.runWith(now, nil, "credits"); res.code != cli.ExitAuth {
		t.Errorf("credits after logout: exit %d", res.code)
	}

	// A narrower login: what its scopes do not cover is 403
	// insufficient_scope, an account setting is refused to any token.
	r.runWith(now, b.open, "login", "--scopes", "fax:read offline_access").ok(t)
	narrow := r.profile(t).OAuth.AccessToken
	// A login over a login revokes the one it replaces.
	r.runWith(now, b.open, "login", "--scopes", "fax:read offline_access").ok(t)
	if code := restStatus(t, r, narrow); code != http.StatusUnauthorized {
		t.Errorf("the replaced login's token: %d, want 401", code)
	}
	if res := r.runWith(now, nil, "credits"); res.code != cli.ExitRefused || !strings.Contains(res.stderr, "insufficient_scope") {
		t.Errorf("credits with fax:read only: exit %d, %s", res.code, res.stderr)
	}
	r.runWith(now, nil, "fax", "list").ok(t)
}

// restStatus is the status of GET /api/v1/faxes with tok.
func restStatus(t *testing.T, r *rig, tok string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", r.env.Svc.Config().APIURL+"/api/v1/faxes", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := r.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusUnauthorized && !strings.Contains(res.Header.Get("WWW-Authenticate"), `resource_metadata="`) {
		t.Errorf("401 without resource_metadata: %q", res.Header.Get("WWW-Authenticate"))
	}
	return res.StatusCode
}

// TestOAuthLoginNoBrowser: with --no-browser the user opens the printed
// URL; a redirect to the listener without the login's state is refused
// and does not end the wait.
func TestOAuthLoginNoBrowser(t *testing.T) {
	r := newRig(t, testenv.WithMCPOAuth())
	delete(r.vars, "FAXHUB_API_KEY")
	secret, _, err := r.env.Svc.Accounts.CreateSession(context.Background(), r.env.OwnerA.ID, "test browser")
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, r: r, session: secret}
	pr, pw := io.Pipe()
	// giveUp ends the login's wait if the user below could not finish.
	giveUp := make(chan time.Time)
	user := make(chan struct{})
	go func() {
		defer close(user)
		sc := bufio.NewScanner(pr)
		done := false
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if done || !strings.HasPrefix(line, "http://") {
				continue
			}
			done = true
			u, err := url.Parse(line)
			if err != nil {
				t.Errorf("printed URL: %v", err)
				close(giveUp)
				continue
			}
			stray, err := http.Get(u.Query().Get("redirect_uri") + "?code=stolen&state=not-the-login")
			if err != nil || stray.StatusCode != http.StatusBadRequest {
				t.Errorf("a redirect with another state: %v %v, want 400", stray, err)
			}
			if stray != nil {
				stray.Body.Close()
			}
			_ = b.open(line)
		}
		if !done {
			close(giveUp)
		}
	}()
	var out strings.Builder
	code := cli.Run(context.Background(), []string{"login", "--no-browser", "--scopes", "fax:read"}, cli.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: pw,
		Getenv:    func(k string) string { return r.vars[k] },
		ConfigDir: func() (string, error) { return r.config, nil },
		HTTP:      r.http, Terminal: func(io.Writer) bool { return false },
		After:       func(time.Duration) <-chan time.Time { return giveUp },
		OpenBrowser: func(string) error { t.Error("--no-browser opened the browser"); return nil },
	})
	pw.Close()
	<-user
	if code != cli.ExitOK || b.approvals != 1 {
		t.Fatalf("login --no-browser: exit %d, approvals %d, stdout %q", code, b.approvals, out.String())
	}
	// Without offline_access there is no refresh token.
	if p := r.profile(t); p.OAuth == nil || p.OAuth.RefreshToken != "" || p.OAuth.Scope != "fax:read" {
		t.Fatalf("profile %+v", p.OAuth)
	}
}
