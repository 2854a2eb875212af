// Package passkeys is the owner's side of faxhub in a browser: sign-up with
// email verification and a passkey, discoverable passkey sign-in, account
// recovery, server-side sessions, and the owner console (dashboard, API
// keys, connected apps, agent access, delegated hosts and their agents'
// device page, the approval inbox with passkey-verified approvals, fax
// numbers and received faxes, account). Pages are server-rendered; JavaScript runs only the
// WebAuthn ceremonies. See docs/console.md.
package passkeys

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/mail"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
)

// Options configure the console.
type Options struct {
	// BaseURL is where the console is served (scheme and host, no trailing
	// slash); links in mails point there and cookies are Secure when it is
	// https.
	BaseURL string
	// RPID is the WebAuthn relying party id; default: BaseURL's host.
	RPID string
	// RPOrigins are the origins allowed in WebAuthn responses; default:
	// BaseURL's origin.
	RPOrigins []string
	// DevMailbox serves /console/mailbox, which shows the mails sent by a
	// *mail.Mailbox to anyone who can reach the console: development only.
	DevMailbox bool
	// Mailer sends verification and recovery mails; default a dev mailbox.
	Mailer core.Mailer
	// Grants lists and revokes OAuth grants; nil until the OAuth server is
	// wired (the apps page then says no apps are connected).
	Grants core.GrantDirectory
	Logger *slog.Logger
}

// Lifetimes of one-time things.
const (
	challengeTTL  = 5 * time.Minute
	emailTokenTTL = 30 * time.Minute
)

// Console serves the owner pages.
type Console struct {
	svc   *services.Set
	store authstate.PasskeyStore
	opts  Options
	log   *slog.Logger
	wa    *webauthn.WebAuthn
	pages map[string]*template.Template
	err   error
	// secure marks cookies Secure (BaseURL is https).
	secure bool
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New builds the console. A configuration error (an unusable BaseURL) is
// reported by Err, and the handler then answers 500.
func New(svc *services.Set, store authstate.PasskeyStore, opts Options) *Console {
	c := &Console{svc: svc, store: store, opts: opts, log: opts.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.opts.Mailer == nil {
		c.opts.Mailer = mail.NewMailbox(c.log, 0)
	}
	c.err = c.init()
	return c
}

func (c *Console) init() error {
	c.opts.BaseURL = strings.TrimRight(c.opts.BaseURL, "/")
	u, err := url.Parse(c.opts.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("passkeys: BaseURL %q must be an absolute http(s) URL", c.opts.BaseURL)
	}
	c.secure = u.Scheme == "https"
	c.opts.RPID = cmp.Or(c.opts.RPID, u.Hostname())
	if len(c.opts.RPOrigins) == 0 {
		c.opts.RPOrigins = []string{u.Scheme + "://" + u.Host}
	}
	c.wa, err = webauthn.New(&webauthn.Config{
		RPID:          c.opts.RPID,
		RPDisplayName: "faxhub",
		RPOrigins:     c.opts.RPOrigins,
		// Attestation is not used to decide anything: any authenticator
		// that does user verification is welcome.
		AttestationPreference: protocol.PreferNoAttestation,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			RequireResidentKey: protocol.ResidentKeyRequired(),
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			UserVerification:   protocol.VerificationRequired,
		},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Timeout: challengeTTL, TimeoutUVD: challengeTTL},
			Registration: webauthn.TimeoutConfig{Timeout: challengeTTL, TimeoutUVD: challengeTTL},
		},
	})
	if err != nil {
		return fmt.Errorf("passkeys: webauthn: %w", err)
	}
	c.pages, err = parsePages()
	return err
}

// Err reports a configuration error found by New.
func (c *Console) Err() error { return c.err }

// Paths are the URL patterns the console answers; mount Handler on each
// (they do not collide with /api/, /.well-known/ or /healthz).
func Paths() []string {
	return []string{"/signup", "/signin", "/signin/", "/signout", "/verify", "/verify/", "/recover", "/console", "/console/", ClaimPathPrefix}
}

// Handler serves every path of Paths.
func (c *Console) Handler() http.Handler {
	if c.err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "the owner console is misconfigured; see the server log", http.StatusInternalServerError)
		})
	}
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", staticHandler(static)))

	mux.HandleFunc("GET /signup", c.signupPage)
	mux.HandleFunc("POST /signup", c.signup)
	mux.HandleFunc("GET /recover", c.recoverPage)
	mux.HandleFunc("POST /recover", c.recover)
	mux.HandleFunc("GET /verify", c.verifyPage)
	mux.HandleFunc("POST /verify/begin", c.verifyBegin)
	mux.HandleFunc("POST /verify/finish", c.verifyFinish)
	mux.HandleFunc("GET /signin", c.signinPage)
	mux.HandleFunc("POST /signin/begin", c.signinBegin)
	mux.HandleFunc("POST /signin/finish", c.signinFinish)
	mux.HandleFunc("POST /signout", c.withOwner(c.signout))
	if c.opts.DevMailbox {
		mux.HandleFunc("GET /console/mailbox", c.mailboxPage)
	}

	mux.HandleFunc("GET /console", c.withOwner(c.dashboard))
	mux.HandleFunc("GET /console/{$}", c.withOwner(c.dashboard))
	mux.HandleFunc("POST /console/credits", c.withOwner(c.buyCredits))
	mux.HandleFunc("GET /console/keys", c.withOwner(c.keysPage))
	mux.HandleFunc("POST /console/keys", c.withOwner(c.createKey))
	mux.HandleFunc("POST /console/keys/{id}/revoke", c.withOwner(c.revokeKey))
	mux.HandleFunc("GET /console/apps", c.withOwner(c.appsPage))
	mux.HandleFunc("POST /console/apps/{id}/revoke", c.withOwner(c.revokeApp))
	mux.HandleFunc("GET /console/agents", c.withOwner(c.agentsPage))
	mux.HandleFunc("POST /console/agents", c.withOwner(c.createEnrollment))
	mux.HandleFunc("POST /console/agents/enrollments/{id}/revoke", c.withOwner(c.revokeEnrollment))
	mux.HandleFunc("POST /console/agents/registrations/{id}/revoke", c.withOwner(c.revokeRegistration))
	mux.HandleFunc("GET /console/hosts", c.withOwner(c.hostsPage))
	mux.HandleFunc("POST /console/hosts", c.withOwner(c.createHost))
	mux.HandleFunc("POST /console/hosts/{id}/revoke", c.withOwner(c.revokeHost))
	mux.HandleFunc("POST /console/hosts/agents/{id}/revoke", c.withOwner(c.revokeDelegatedAgent))
	mux.HandleFunc("GET "+hosts.DevicePagePath, c.withOwner(c.devicePage))
	mux.HandleFunc("POST "+hosts.DevicePagePath, c.withOwner(c.decideDevice))
	mux.HandleFunc("GET "+ClaimPathPrefix+"{token}", c.withOwner(c.claimPage))
	mux.HandleFunc("POST "+ClaimPathPrefix+"{token}", c.withOwner(c.decideClaim))
	mux.HandleFunc("GET /console/approvals", c.withOwner(c.approvalsPage))
	mux.HandleFunc("GET /console/approvals/{id}", c.withOwner(c.approvalPage))
	mux.HandleFunc("POST /console/approvals/{id}", c.withOwner(c.decide))
	mux.HandleFunc("POST /console/approvals/{id}/passkey/begin", c.withOwner(c.approvalBegin))
	mux.HandleFunc("POST /console/approvals/{id}/passkey/finish", c.withOwner(c.approvalFinish))
	mux.HandleFunc("GET /console/drafts/{id}", c.withOwner(c.draftPage))
	mux.HandleFunc("POST /console/drafts/{id}/pay", c.withOwner(c.payDraft))
	mux.HandleFunc("GET /console/numbers", c.withOwner(c.numbersPage))
	mux.HandleFunc("POST /console/numbers", c.withOwner(c.buyNumber))
	mux.HandleFunc("GET /console/numbers/{id}", c.withOwner(c.numberPage))
	mux.HandleFunc("POST /console/numbers/{id}/pay", c.withOwner(c.payNumber))
	mux.HandleFunc("POST /console/numbers/{id}/pay-credits", c.withOwner(c.payNumberWithCredits))
	mux.HandleFunc("POST /console/numbers/{id}/release", c.withOwner(c.releaseNumber))
	mux.HandleFunc("GET /console/inbox", c.withOwner(c.inboxPage))
	mux.HandleFunc("POST /console/inbox/simulate", c.simulateInbound)
	mux.HandleFunc("GET /console/inbox/{id}", c.withOwner(c.inboxFaxPage))
	mux.HandleFunc("POST /console/inbox/{id}/download", c.withOwner(c.inboxDownload))
	mux.HandleFunc("GET /console/account", c.withOwner(c.accountPage))
	mux.HandleFunc("POST /console/account/passkeys/begin", c.withOwner(c.addPasskeyBegin))
	mux.HandleFunc("POST /console/account/passkeys/finish", c.withOwner(c.addPasskeyFinish))
	mux.HandleFunc("POST /console/account/passkeys/{id}/rename", c.withOwner(c.renamePasskey))
	mux.HandleFunc("POST /console/account/passkeys/{id}/delete", c.withOwner(c.deletePasskey))
	mux.HandleFunc("POST /console/account/signout-all", c.withOwner(c.signoutAll))
	mux.HandleFunc("/", c.notFound)

	// Browsers say where a request comes from (Sec-Fetch-Site, Origin):
	// every unsafe cross-origin request is refused before any handler runs.
	// The console's configured origin is trusted too, for deployments
	// behind a proxy that rewrites Host.
	cop := http.NewCrossOriginProtection()
	for _, o := range c.opts.RPOrigins {
		_ = cop.AddTrustedOrigin(o)
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, core.Errorf(core.KindForbidden, codeCSRF, "cross-origin requests to the console are refused"))
	}))
	return securityHeaders(cop.Handler(mux))
}

// codeCSRF is the error code of a refused cross-site request.
const codeCSRF = "csrf_refused"

func staticHandler(fsys fs.FS) http.Handler {
	fsrv := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fsrv.ServeHTTP(w, r)
	})
}

// securityHeaders keeps the pages from being framed, sniffed, or leaking
// one-time links in Referer headers. No form-action: consent forms end in
// a redirect to the OAuth client, which form-action would block.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

func (c *Console) now() time.Time {
	return c.svc.Config().Now().UTC().Truncate(time.Microsecond)
}

// ---- sessions

// signedIn is a request's owner and session.
type signedIn struct {
	owner   *core.Owner
	session *core.Session
	// csrf is the per-session form token.
	csrf string
}

// csrfToken derives the form token from the session secret, which only the
// browser holding the cookie and the server (while handling its request)
// know; nothing more needs storing.
func csrfToken(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("faxhub console form token"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (c *Console) currentSession(r *http.Request) (*signedIn, error) {
	sess, err := web.OwnerSession(r, c.svc.Core)
	if sess == nil || err != nil {
		return nil, err
	}
	ck, _ := r.Cookie(web.SessionCookieName)
	o, err := c.svc.Core.Owner(r.Context(), sess.OwnerID)
	if err != nil {
		return nil, fmt.Errorf("load owner of session: %w", err)
	}
	return &signedIn{owner: o, session: sess, csrf: csrfToken(ck.Value)}, nil
}

type ownerHandler func(w http.ResponseWriter, r *http.Request, s *signedIn)

// withOwner requires a session. Pages send a signed-out browser to sign in
// and back; other requests get 401. Every unsafe request must also carry
// the session's form token (a form field, or X-CSRF-Token from scripts).
func (c *Console) withOwner(h ownerHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := c.currentSession(r)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if s == nil {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			c.fail(w, r, core.Errorf(core.KindUnauthenticated, core.CodeUnauthenticated, "you are signed out; sign in and try again"))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			got := r.Header.Get("X-CSRF-Token")
			if got == "" && !isJSON(r) {
				got = r.PostFormValue("csrf")
			}
			if !hmac.Equal([]byte(got), []byte(s.csrf)) {
				c.fail(w, r, core.Errorf(core.KindForbidden, codeCSRF, "this form has expired; reload the page and try again"))
				return
			}
		}
		h(w, r, s)
	}
}

func (c *Console) setSessionCookie(w http.ResponseWriter, secret string) {
	http.SetCookie(w, &http.Cookie{
		Name: web.SessionCookieName, Value: secret, Path: "/", HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(core.SessionAbsoluteTimeout / time.Second),
	})
}

func (c *Console) clearSessionCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: web.SessionCookieName, Value: "", Path: "/", HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1,
	})
}

// signIn starts a session for the owner and sets its cookie.
func (c *Console) signIn(ctx context.Context, w http.ResponseWriter, r *http.Request, ownerID string) error {
	secret, _, err := c.svc.Core.CreateSession(ctx, ownerID, r.UserAgent())
	if err != nil {
		return err
	}
	c.setSessionCookie(w, secret)
	return nil
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if err := c.svc.Core.EndSession(r.Context(), s.session.ID); err != nil {
		c.fail(w, r, err)
		return
	}
	c.clearSessionCookie(w)
	http.Redirect(w, r, "/signin?signedout=1", http.StatusSeeOther)
}

func (c *Console) signoutAll(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if err := c.svc.Core.EndAllSessions(r.Context(), s.owner.ID); err != nil {
		c.fail(w, r, err)
		return
	}
	c.clearSessionCookie(w)
	http.Redirect(w, r, "/signin?signedout=all", http.StatusSeeOther)
}

// ---- redirects

// localPath returns p if it is a path on this origin (no scheme, no host,
// no protocol-relative or backslash tricks, no dot segments), else "".
func localPath(p string) string {
	if p == "" || p[0] != '/' || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n\t") {
		return ""
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return ""
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return ""
		}
	}
	if strings.Contains(strings.ToLower(u.RawPath), "%2f") || strings.Contains(u.Path, "//") {
		return ""
	}
	return u.RequestURI()
}

// approvalReturn is where to go after a decision: the OAuth server's
// pages or the console, nothing else.
func approvalReturn(p string) string {
	p = localPath(p)
	if strings.HasPrefix(p, "/api/auth/") || strings.HasPrefix(p, "/console/") {
		return p
	}
	return ""
}

// ---- errors

func isJSON(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json")
}

// wantsJSON reports whether the caller is the ceremony script rather than a
// page.
func wantsJSON(r *http.Request) bool {
	return isJSON(r) || strings.Contains(r.Header.Get("Accept"), "application/json")
}

// fail answers err as problem+json to scripts and as an error page to
// browsers. Internal errors are logged without their text reaching the page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := core.AsError(err)
	if e.Kind == core.KindInternal {
		c.log.ErrorContext(r.Context(), "console request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if wantsJSON(r) {
		writeProblem(w, r, err)
		return
	}
	st := statusOf(e.Kind)
	msg := e.Message
	if e.Kind == core.KindInternal {
		msg = "Something went wrong on our side. It has been logged; please try again."
	}
	c.render(w, r, st, "error", pageData{Title: titleFor(st), Error: msg})
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.fail(w, r, core.Errorf(core.KindNotFound, core.CodeNotFound, "there is no page at %s", r.URL.Path))
}

func titleFor(st int) string {
	switch st {
	case http.StatusNotFound:
		return "Not found"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusUnauthorized:
		return "Signed out"
	case http.StatusConflict:
		return "Already decided"
	}
	if st >= 500 {
		return "Something went wrong"
	}
	return "That did not work"
}
