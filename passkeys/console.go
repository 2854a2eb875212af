// Package passkeys is the owner's side of faxhub in a browser: sign-up with
// email verification and a passkey, discoverable passkey sign-in, account
// recovery, server-side sessions, and the owner console (dashboard, API
// keys, fax settings, connected apps, agent access, delegated hosts and their agents'
// device page, the approval inbox with passkey-verified approvals, fax
// numbers and received faxes, sending a fax, account). Pages are server-rendered;
// JavaScript runs the WebAuthn ceremonies and enhances the send page (upload
// progress, the number checked as typed). See docs/console.md.
package passkeys

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
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
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/authstate"
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

// challengeTTL is how long a WebAuthn ceremony may take (an e-mail
// link's lifetime is accounts.EmailLinkTTL).
const challengeTTL = 5 * time.Minute

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
	// urls is the router the console is registered on (Register): it
	// builds the links the console hands out.
	urls *web.Router
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

// Paths are the URL patterns under which the console answers every
// request its routes do not serve with its own 404 page (a pattern ending
// in "/" is a subtree). They do not collide with /api/, /.well-known/ or
// /healthz.
func Paths() []string {
	return []string{"/signup", "/signin", "/signin/", "/signout", "/verify", "/verify/", "/recover", "/console", "/console/", core.LinkClaimPage.PathPrefix()}
}

// Register puts the console's pages and form endpoints on r (base origin)
// and its 404 page under every path of Paths. Every answer, the 404 page
// included, carries the console's security headers, and every unsafe
// cross-origin request is refused before a handler runs. A misconfigured
// console (Err) answers 500 on all of them.
func (c *Console) Register(r *web.Router) {
	c.urls = r
	g := r.Group("passkeys", web.OriginBase, c.guard())
	static, _ := fs.Sub(staticFS, "static")
	none, session := web.AuthNone, web.AuthSession
	page := func(name, methods, path string, auth web.Auth, h http.HandlerFunc) {
		g.Handle(web.Route{Name: "passkeys." + name, Methods: methods, Path: path, Auth: auth}, h)
	}
	g.Handle(web.Route{Name: "passkeys.static", Methods: "GET", Path: "/console/static/", Prefix: true, Auth: none},
		http.StripPrefix("/console/static/", staticHandler(static)))

	page("signupPage", "GET", "/signup", none, c.signupPage)
	page("signup", "POST", "/signup", none, c.signup)
	page("recoverPage", "GET", "/recover", none, c.recoverPage)
	page("recover", "POST", "/recover", none, c.recover)
	page("verifyPage", "GET", "/verify", none, c.verifyPage)
	page("verifyBegin", "POST", "/verify/begin", none, c.verifyBegin)
	page("verifyFinish", "POST", "/verify/finish", none, c.verifyFinish)
	page("signinPage", "GET", "/signin", none, c.signinPage)
	page("signinBegin", "POST", "/signin/begin", none, c.signinBegin)
	page("signinFinish", "POST", "/signin/finish", none, c.signinFinish)
	page("signout", "POST", "/signout", session, c.withOwner(c.signout))
	if c.opts.DevMailbox {
		// Loopback peers only (mailboxPage checks).
		page("mailbox", "GET", "/console/mailbox", none, c.mailboxPage)
	}

	page("dashboard", "GET", "/console", session, c.withOwner(c.dashboard))
	page("dashboardSlash", "GET", "/console/", session, c.withOwner(c.dashboard))
	page("buyCredits", "POST", "/console/credits", session, c.withOwner(c.buyCredits))
	page("setCreditAlert", "POST", "/console/credits/alert", session, c.withOwner(c.setCreditAlert))
	page("send", "GET", "/console/send", session, c.withOwner(c.sendPage))
	page("sendFax", "POST", "/console/send", session, c.withOwner(c.sendFax))
	page("sendUpload", "POST", "/console/send/upload", session, c.uploadDocument)
	page("sendCheck", "GET", "/console/send/check", session, c.withOwner(c.checkNumber))
	page("sendPreview", "POST", "/console/send/preview", session, c.withOwner(c.previewSend))
	page("faxSettings", "GET", "/console/fax-settings", session, c.withOwner(c.faxSettingsPage))
	page("saveFaxSettings", "POST", "/console/fax-settings", session, c.withOwner(c.saveFaxSettings))
	page("keys", "GET", "/console/keys", session, c.withOwner(c.keysPage))
	page("createKey", "POST", "/console/keys", session, c.withOwner(c.createKey))
	page("revokeKey", "POST", "/console/keys/{id}/revoke", session, c.withOwner(c.revokeKey))
	page("apps", "GET", "/console/apps", session, c.withOwner(c.appsPage))
	page("revokeApp", "POST", "/console/apps/{id}/revoke", session, c.withOwner(c.revokeApp))
	page("agents", "GET", "/console/agents", session, c.withOwner(c.agentsPage))
	page("createEnrollment", "POST", "/console/agents", session, c.withOwner(c.createEnrollment))
	page("revokeEnrollment", "POST", "/console/agents/enrollments/{id}/revoke", session, c.withOwner(c.revokeEnrollment))
	page("revokeRegistration", "POST", "/console/agents/registrations/{id}/revoke", session, c.withOwner(c.revokeRegistration))
	page("hosts", "GET", "/console/hosts", session, c.withOwner(c.hostsPage))
	page("createHost", "POST", "/console/hosts", session, c.withOwner(c.createHost))
	page("revokeHost", "POST", "/console/hosts/{id}/revoke", session, c.withOwner(c.revokeHost))
	page("revokeDelegatedAgent", "POST", "/console/hosts/agents/{id}/revoke", session, c.withOwner(c.revokeDelegatedAgent))
	page("device", "GET", core.LinkDevicePage.Path(), session, c.withOwner(c.devicePage))
	page("decideDevice", "POST", core.LinkDevicePage.Path(), session, c.withOwner(c.decideDevice))
	page("claim", "GET", core.LinkClaimPage.Path(), session, c.withOwner(c.claimPage))
	page("decideClaim", "POST", core.LinkClaimPage.Path(), session, c.withOwner(c.decideClaim))
	page("approvals", "GET", "/console/approvals", session, c.withOwner(c.approvalsPage))
	page("approval", "GET", core.LinkApprovalPage.Path(), session, c.withOwner(c.approvalPage))
	page("decide", "POST", core.LinkApprovalPage.Path(), session, c.withOwner(c.decide))
	page("approvalPasskeyBegin", "POST", "/console/approvals/{id}/passkey/begin", session, c.withOwner(c.approvalBegin))
	page("approvalPasskeyFinish", "POST", "/console/approvals/{id}/passkey/finish", session, c.withOwner(c.approvalFinish))
	page("draft", "GET", core.LinkDraftPage.Path(), session, c.withOwner(c.draftPage))
	page("payDraft", "POST", "/console/drafts/{id}/pay", session, c.withOwner(c.payDraft))
	page("faxes", "GET", "/console/faxes", session, c.withOwner(c.faxesPage))
	page("fax", "GET", core.LinkFaxPage.Path(), session, c.withOwner(c.faxPage))
	page("cancelFax", "POST", "/console/faxes/{id}/cancel", session, c.withOwner(c.cancelFax))
	page("resendFax", "POST", "/console/faxes/{id}/resend", session, c.withOwner(c.resendFax))
	page("faxReceipt", "GET", "/console/faxes/{id}/receipt", session, c.withOwner(c.receiptDownload))
	page("numbers", "GET", "/console/numbers", session, c.withOwner(c.numbersPage))
	page("buyNumber", "POST", "/console/numbers", session, c.withOwner(c.buyNumber))
	page("number", "GET", core.LinkNumberPage.Path(), session, c.withOwner(c.numberPage))
	page("payNumber", "POST", "/console/numbers/{id}/pay", session, c.withOwner(c.payNumber))
	page("payNumberWithCredits", "POST", "/console/numbers/{id}/pay-credits", session, c.withOwner(c.payNumberWithCredits))
	page("releaseNumber", "POST", "/console/numbers/{id}/release", session, c.withOwner(c.releaseNumber))
	page("inbox", "GET", "/console/inbox", session, c.withOwner(c.inboxPage))
	page("simulateInbound", "POST", "/console/inbox/simulate", session, c.simulateInbound)
	page("inboxFax", "GET", "/console/inbox/{id}", session, c.withOwner(c.inboxFaxPage))
	page("inboxDownload", "POST", "/console/inbox/{id}/download", session, c.withOwner(c.inboxDownload))
	page("webhooks", "GET", "/console/webhooks", session, c.withOwner(c.webhooksPage))
	page("createWebhook", "POST", "/console/webhooks", session, c.withOwner(c.createWebhook))
	page("webhook", "GET", core.LinkWebhookPage.Path(), session, c.withOwner(c.webhookPage))
	page("enableWebhook", "POST", "/console/webhooks/{id}/enable", session, c.withOwner(c.setWebhookEnabled(true)))
	page("disableWebhook", "POST", "/console/webhooks/{id}/disable", session, c.withOwner(c.setWebhookEnabled(false)))
	page("deleteWebhook", "POST", "/console/webhooks/{id}/delete", session, c.withOwner(c.deleteWebhook))
	page("rotateWebhook", "POST", "/console/webhooks/{id}/rotate", session, c.withOwner(c.rotateWebhook))
	page("testWebhook", "POST", "/console/webhooks/{id}/test", session, c.withOwner(c.testWebhook))
	page("redeliverWebhook", "POST", "/console/webhooks/{id}/redeliver", session, c.withOwner(c.redeliverWebhook))
	page("account", "GET", "/console/account", session, c.withOwner(c.accountPage))
	page("addPasskeyBegin", "POST", "/console/account/passkeys/begin", session, c.withOwner(c.addPasskeyBegin))
	page("addPasskeyFinish", "POST", "/console/account/passkeys/finish", session, c.withOwner(c.addPasskeyFinish))
	page("renamePasskey", "POST", "/console/account/passkeys/{id}/rename", session, c.withOwner(c.renamePasskey))
	page("deletePasskey", "POST", "/console/account/passkeys/{id}/delete", session, c.withOwner(c.deletePasskey))
	page("signoutAll", "POST", "/console/account/signout-all", session, c.withOwner(c.signoutAll))
	for _, p := range Paths() {
		g.Fallback(p, http.HandlerFunc(c.notFound))
	}
}

// url is the absolute URL of a named route of the router the console is
// registered on.
func (c *Console) url(name string, pairs ...string) (string, error) {
	if c.urls == nil {
		return "", errors.New("passkeys: the console is not registered on a router")
	}
	return c.urls.URL(name, pairs...)
}

// guard is the middleware of every console answer: a misconfigured
// console answers 500; otherwise security headers, then cross-origin
// protection (browsers say where a request comes from: Sec-Fetch-Site,
// Origin), so an unsafe cross-origin request is refused before any
// handler runs. The console's configured origin is trusted too, for
// deployments behind a proxy that rewrites Host.
func (c *Console) guard() web.Middleware {
	if c.err != nil {
		return func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "the owner console is misconfigured; see the server log", http.StatusInternalServerError)
			})
		}
	}
	cop := http.NewCrossOriginProtection()
	for _, o := range c.opts.RPOrigins {
		_ = cop.AddTrustedOrigin(o)
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, core.Errorf(core.KindForbidden, codeCSRF, "cross-origin requests to the console are refused"))
	}))
	csp := consoleCSP(c.svc.Config().APIURL)
	return func(next http.Handler) http.Handler { return securityHeaders(csp, cop.Handler(next)) }
}

// consoleCSP is the console's Content-Security-Policy: everything from
// its own origin, and images from faxhub's API origin too when that is
// another one (the pages of a fax and of a preview are served there by
// signed links). No script or style from anywhere else.
func consoleCSP(apiURL string) string {
	img := "'self' data:"
	if u, err := url.Parse(apiURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		img += " " + u.Scheme + "://" + u.Host
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src " + img + "; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
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
func securityHeaders(csp string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
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
	owner   *accounts.Owner
	session *accounts.Session
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
	sess, err := web.OwnerSession(r, c.svc.Accounts)
	if sess == nil || err != nil {
		return nil, err
	}
	ck, _ := r.Cookie(web.SessionCookieName)
	o, err := c.svc.Accounts.Owner(r.Context(), sess.OwnerID)
	if err != nil {
		return nil, fmt.Errorf("load owner of session: %w", err)
	}
	return &signedIn{owner: o, session: sess, csrf: csrfToken(ck.Value)}, nil
}

type ownerHandler func(w http.ResponseWriter, r *http.Request, s *signedIn)

// bodySession is the session of a request whose body a handler bounds
// before withOwner would read its form token (the multipart uploads);
// nil, with the answer written, when there is none.
func (c *Console) bodySession(w http.ResponseWriter, r *http.Request) *signedIn {
	s, err := c.currentSession(r)
	if err == nil && s == nil {
		err = core.Errorf(core.KindUnauthenticated, core.CodeUnauthenticated, "you are signed out; sign in and try again")
	}
	if err != nil {
		c.fail(w, r, err)
		return nil
	}
	return s
}

// withOwner requires a session. Pages send a signed-out browser to sign in
// and back; other requests (and scripts' GETs) get 401. Every unsafe request must also carry
// the session's form token (a form field, or X-CSRF-Token from scripts).
func (c *Console) withOwner(h ownerHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := c.currentSession(r)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if s == nil {
			if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !wantsJSON(r) {
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
		SameSite: http.SameSiteLaxMode, MaxAge: int(accounts.SessionAbsoluteTimeout / time.Second),
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
	secret, _, err := c.svc.Accounts.CreateSession(ctx, ownerID, r.UserAgent())
	if err != nil {
		return err
	}
	c.setSessionCookie(w, secret)
	return nil
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if err := c.svc.Accounts.EndSession(r.Context(), s.session.ID); err != nil {
		c.fail(w, r, err)
		return
	}
	c.clearSessionCookie(w)
	http.Redirect(w, r, "/signin?signedout=1", http.StatusSeeOther)
}

func (c *Console) signoutAll(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if err := c.svc.Accounts.EndAllSessions(r.Context(), s.owner.ID); err != nil {
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
