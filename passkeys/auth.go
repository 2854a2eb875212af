package passkeys

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/authstate"
)

type emailForm struct {
	Email, Name, EmailError string
	Sent                    bool
}

func (c *Console) signupPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "signup", pageData{Title: "Create account", Nav: "signup", Body: emailForm{}})
}

func (c *Console) recoverPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "recover", pageData{Title: "Recover your account", Nav: "signin", Body: emailForm{}})
}

// formError shows a refusal of accounts.StartSignUp/StartRecovery on the
// form: an invalid address next to its field, anything the owner can act
// on (a long name, too many mails) above it. It reports false for a
// failure to show as an error page.
func formError(f *emailForm, err error) (status int, msg string, ok bool) {
	e := core.AsError(err)
	switch {
	case e.Kind == core.KindInvalid && e.Fields["field"] == "email":
		f.EmailError = "Enter a valid email address, like name@example.com."
		return http.StatusBadRequest, "Check the form below.", true
	case e.Kind == core.KindInvalid:
		return http.StatusBadRequest, e.Message, true
	case e.Kind == core.KindRateLimited:
		return http.StatusTooManyRequests, e.Message, true
	}
	return 0, "", false
}

// signup mails what accounts decides: a verification link, or for an
// address that already has an account a recovery link. The page says the
// same either way, so the form does not reveal who has an account.
func (c *Console) signup(w http.ResponseWriter, r *http.Request) {
	f := emailForm{Email: strings.TrimSpace(r.PostFormValue("email")), Name: strings.TrimSpace(r.PostFormValue("name"))}
	ctx := r.Context()
	link, err := c.svc.Accounts.StartSignUp(ctx, f.Email, f.Name)
	if status, msg, ok := formError(&f, err); ok {
		c.render(w, r, status, "signup", pageData{Title: "Create account", Nav: "signup", Error: msg, Body: f})
		return
	}
	if err == nil {
		f.Email = link.Email
		if link.Purpose == authstate.EmailTokenRecovery {
			err = c.sendRecovery(ctx, link, "Someone (hopefully you) tried to create a faxhub account with this address, which already has one.")
		} else {
			err = c.sendSignup(ctx, link)
		}
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	f.Sent = true
	c.render(w, r, http.StatusOK, "signup", pageData{Title: "Check your email", Nav: "signup", Body: f})
}

func (c *Console) recover(w http.ResponseWriter, r *http.Request) {
	f := emailForm{Email: strings.TrimSpace(r.PostFormValue("email"))}
	ctx := r.Context()
	link, err := c.svc.Accounts.StartRecovery(ctx, f.Email)
	if status, msg, ok := formError(&f, err); ok {
		c.render(w, r, status, "recover", pageData{Title: "Recover your account", Nav: "signin", Error: msg, Body: f})
		return
	}
	if err == nil {
		f.Email = link.Email
		if link.Secret != "" { // nothing to mail: the page must not tell
			err = c.sendRecovery(ctx, link, "You asked to recover your faxhub account.")
		}
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	f.Sent = true
	c.render(w, r, http.StatusOK, "recover", pageData{Title: "Check your email", Nav: "signin", Body: f})
}

// linkURL is the verify page's URL carrying link's secret.
func (c *Console) linkURL(link *accounts.EmailLink) (string, error) {
	verify, err := c.url("passkeys.verifyPage")
	if err != nil {
		return "", err
	}
	return verify + "?token=" + url.QueryEscape(link.Secret), nil
}

func (c *Console) sendSignup(ctx context.Context, l *accounts.EmailLink) error {
	link, err := c.linkURL(l)
	if err != nil {
		return err
	}
	hello := "Hello,"
	if l.Name != "" {
		hello = "Hello " + l.Name + ","
	}
	return c.send(ctx, core.Mail{To: l.Email, Subject: "Verify your email for faxhub", Text: hello + `

open this link to verify your email address and create the passkey you will sign in with:

` + link + `

The link works once and expires in 30 minutes. If you did not ask for a faxhub account, ignore this mail.
`})
}

func (c *Console) sendRecovery(ctx context.Context, l *accounts.EmailLink, why string) error {
	signIn, err := c.url("passkeys.signinPage")
	if err != nil {
		return err
	}
	link, err := c.linkURL(l)
	if err != nil {
		return err
	}
	return c.send(ctx, core.Mail{To: l.Email, Subject: "Recover your faxhub account", Text: why + `

To register a new passkey for your account, open:

` + link + `

The link works once and expires in 30 minutes. Registering a passkey through it signs your account out everywhere else.
If you still have your passkey, you can simply sign in at ` + signIn + ` and ignore this mail.
`})
}

func (c *Console) send(ctx context.Context, m core.Mail) error {
	if err := c.opts.Mailer.Send(ctx, m); err != nil {
		return fmt.Errorf("send %q mail: %w", m.Subject, err)
	}
	return nil
}

type verifyBody struct {
	Token, Email, Name string
	Recovery           bool
}

// verifyPage shows what the link is for. It changes nothing: mail
// scanners open links too.
func (c *Console) verifyPage(w http.ResponseWriter, r *http.Request) {
	secret := r.URL.Query().Get("token")
	t, err := c.svc.Accounts.OpenEmailLink(r.Context(), secret)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "verify", pageData{Title: "Create your passkey", Body: verifyBody{
		Token: secret, Email: t.Email, Name: t.Name, Recovery: t.Purpose == authstate.EmailTokenRecovery,
	}})
}

func tokenPurpose(t *authstate.EmailToken) string {
	if t.Purpose == authstate.EmailTokenRecovery {
		return authstate.ChallengeRecovery
	}
	return authstate.ChallengeSignup
}

func (c *Console) verifyBegin(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := readCeremony(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	t, err := c.svc.Accounts.OpenEmailLink(ctx, req.Token)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	ownerID, err := c.svc.Accounts.EmailLinkOwner(ctx, t)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	u, err := c.loadOwner(ctx, ownerID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	creation, sd, err := c.wa.BeginRegistration(u, webauthnExclusions(u))
	if err != nil {
		c.fail(w, r, fmt.Errorf("begin registration: %w", err))
		return
	}
	if err := c.saveChallenge(ctx, sd, tokenPurpose(t), &ownerID, t.Hash); err != nil {
		c.fail(w, r, err)
		return
	}
	writeOptions(w, creation)
}

// verifyFinish registers the passkey of a sign-up or recovery and signs
// the owner in. The link is spent only once the passkey verified.
func (c *Console) verifyFinish(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := readCeremony(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	t, err := c.svc.Accounts.OpenEmailLink(ctx, req.Token)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	u, cred, err := c.finishRegistration(ctx, req, ceremony{purpose: tokenPurpose(t), what: "registration",
		bound: func(ch *authstate.WebAuthnChallenge) error {
			if !sameString(ch.Binding, t.Hash) || ch.OwnerID == nil {
				return core.Errorf(core.KindForbidden, codeChallengeUnknown, "this passkey prompt was issued for another link; start again")
			}
			return nil
		}})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	pk := c.newPasskey(u.o.ID, req.Name, cred)
	// The link is spent with the passkey stored (a recovery then signs
	// the owner out everywhere else): accounts' rule.
	if err := c.svc.Accounts.RedeemEmailLink(ctx, t, func(ps authstate.PasskeyQueries) error {
		return c.storePasskey(ctx, ps, pk)
	}); err != nil {
		c.fail(w, r, err)
		return
	}
	if err := c.signIn(ctx, w, r, u.o.ID); err != nil {
		c.fail(w, r, err)
		return
	}
	c.log.InfoContext(ctx, "passkey registered", "owner_id", u.o.ID, "passkey_id", pk.ID, "via", t.Purpose)
	writeRedirect(w, "/console")
}

func (c *Console) storePasskey(ctx context.Context, ps authstate.PasskeyQueries, pk *authstate.Passkey) error {
	if err := ps.CreatePasskey(ctx, pk); err != nil {
		if errors.Is(err, core.ErrExists) {
			return core.Errorf(core.KindConflict, codePasskeyInvalid, "this passkey is registered already")
		}
		return err
	}
	return nil
}

type signinBody struct{ Next string }

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	if s, err := c.currentSession(r); err == nil && s != nil {
		http.Redirect(w, r, cmpPath(next, "/console"), http.StatusSeeOther)
		return
	}
	d := pageData{Title: "Sign in", Nav: "signin", Body: signinBody{Next: next}}
	switch r.URL.Query().Get("signedout") {
	case "1":
		d.Notice = "You are signed out."
	case "all":
		d.Notice = "You are signed out everywhere."
	}
	c.render(w, r, http.StatusOK, "signin", d)
}

func cmpPath(p, def string) string {
	if p == "" {
		return def
	}
	return p
}

func (c *Console) signinBegin(w http.ResponseWriter, r *http.Request) {
	if _, err := readCeremony(w, r); err != nil {
		c.fail(w, r, err)
		return
	}
	assertion, sd, err := c.wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		c.fail(w, r, fmt.Errorf("begin login: %w", err))
		return
	}
	if err := c.saveChallenge(r.Context(), sd, authstate.ChallengeLogin, nil, ""); err != nil {
		c.fail(w, r, err)
		return
	}
	writeOptions(w, assertion)
}

func (c *Console) signinFinish(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := readCeremony(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	found, _, _, err := c.finishAssertion(ctx, req, ceremony{purpose: authstate.ChallengeLogin, what: "login"})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if err := c.signIn(ctx, w, r, found.o.ID); err != nil {
		c.fail(w, r, err)
		return
	}
	writeRedirect(w, cmpPath(localPath(req.Next), "/console"))
}
