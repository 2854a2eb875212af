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

// signup mails a verification link. An address that already has an
// account gets a recovery link instead, and the page says the same either
// way, so the form does not reveal who has an account.
func (c *Console) signup(w http.ResponseWriter, r *http.Request) {
	f := emailForm{Email: strings.TrimSpace(r.PostFormValue("email")), Name: strings.TrimSpace(r.PostFormValue("name"))}
	email, err := accounts.NormalizeEmail(f.Email)
	if err != nil || len(f.Name) > 200 {
		f.EmailError = "Enter a valid email address, like name@example.com."
		if err == nil {
			f.EmailError = ""
		}
		msg := "Check the form below."
		if len(f.Name) > 200 {
			msg = "Your name can be at most 200 characters."
		}
		c.render(w, r, http.StatusBadRequest, "signup", pageData{Title: "Create account", Nav: "signup", Error: msg, Body: f})
		return
	}
	f.Email = email
	ctx := r.Context()
	if err := c.allowMail(ctx, email); err != nil {
		c.render(w, r, http.StatusTooManyRequests, "signup", pageData{Title: "Create account", Nav: "signup", Error: core.AsError(err).Message, Body: f})
		return
	}
	o, err := c.svc.Accounts.OwnerByEmail(ctx, email)
	switch {
	case err == nil:
		err = c.sendRecovery(ctx, o, "Someone (hopefully you) tried to create a faxhub account with this address, which already has one.")
	case core.ErrorKind(err) == core.KindNotFound:
		err = c.sendSignup(ctx, email, f.Name)
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
	email, err := accounts.NormalizeEmail(f.Email)
	if err != nil {
		f.EmailError = "Enter a valid email address, like name@example.com."
		c.render(w, r, http.StatusBadRequest, "recover", pageData{Title: "Recover your account", Nav: "signin", Error: "Check the form below.", Body: f})
		return
	}
	f.Email = email
	ctx := r.Context()
	if err := c.allowMail(ctx, email); err != nil {
		c.render(w, r, http.StatusTooManyRequests, "recover", pageData{Title: "Recover your account", Nav: "signin", Error: core.AsError(err).Message, Body: f})
		return
	}
	o, err := c.svc.Accounts.OwnerByEmail(ctx, email)
	switch {
	case err == nil:
		err = c.sendRecovery(ctx, o, "You asked to recover your faxhub account.")
	case core.ErrorKind(err) == core.KindNotFound:
		err = nil // the page must not tell
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	f.Sent = true
	c.render(w, r, http.StatusOK, "recover", pageData{Title: "Check your email", Nav: "signin", Body: f})
}

func (c *Console) allowMail(ctx context.Context, email string) error {
	err := c.svc.Kernel.Allow(ctx, core.LimitConsoleMail, core.HashSecret(email))
	if e := core.AsError(err); err != nil && e.Kind == core.KindRateLimited {
		return core.Errorf(core.KindRateLimited, core.CodeRateLimited, "we sent several mails to this address recently; wait %d minutes and try again", e.RetryAfterSeconds/60+1)
	}
	return err
}

// issueToken stores a new one-time link's hash and returns the link.
func (c *Console) issueToken(ctx context.Context, purpose, email, name string, ownerID *string) (string, error) {
	secret := core.SecretEmailLink + core.RandomString(32)
	now := c.now()
	err := c.store.CreateEmailToken(ctx, &authstate.EmailToken{
		Hash: core.HashSecret(secret), Purpose: purpose, Email: email, Name: name, OwnerID: ownerID,
		CreatedAt: now, ExpiresAt: now.Add(emailTokenTTL),
	})
	if err != nil {
		return "", err
	}
	verify, err := c.url("passkeys.verifyPage")
	if err != nil {
		return "", err
	}
	return verify + "?token=" + url.QueryEscape(secret), nil
}

func (c *Console) sendSignup(ctx context.Context, email, name string) error {
	link, err := c.issueToken(ctx, authstate.EmailTokenSignup, email, name, nil)
	if err != nil {
		return err
	}
	hello := "Hello,"
	if name != "" {
		hello = "Hello " + name + ","
	}
	return c.send(ctx, core.Mail{To: email, Subject: "Verify your email for faxhub", Text: hello + `

open this link to verify your email address and create the passkey you will sign in with:

` + link + `

The link works once and expires in 30 minutes. If you did not ask for a faxhub account, ignore this mail.
`})
}

func (c *Console) sendRecovery(ctx context.Context, o *accounts.Owner, why string) error {
	signIn, err := c.url("passkeys.signinPage")
	if err != nil {
		return err
	}
	link, err := c.issueToken(ctx, authstate.EmailTokenRecovery, o.Email, o.Name, &o.ID)
	if err != nil {
		return err
	}
	return c.send(ctx, core.Mail{To: o.Email, Subject: "Recover your faxhub account", Text: why + `

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

// tokenFor looks up a link's token and explains why it cannot be used.
func (c *Console) tokenFor(ctx context.Context, secret string) (*authstate.EmailToken, error) {
	if !strings.HasPrefix(secret, core.SecretEmailLink) {
		return nil, core.Errorf(core.KindNotFound, codeLinkInvalid, "this link is not valid; check that you copied all of it, or request a new one")
	}
	t, err := c.store.GetEmailToken(ctx, core.HashSecret(secret))
	switch {
	case errors.Is(err, core.ErrNoRows):
		return nil, core.Errorf(core.KindNotFound, codeLinkInvalid, "this link is not valid; check that you copied all of it, or request a new one")
	case err != nil:
		return nil, err
	case t.UsedAt != nil:
		return nil, core.Errorf(core.KindGone, codeLinkInvalid, "this link was used already; sign in with your passkey, or request a new link")
	case !c.now().Before(t.ExpiresAt):
		return nil, core.Errorf(core.KindGone, codeLinkInvalid, "this link has expired; request a new one")
	}
	return t, nil
}

type verifyBody struct {
	Token, Email, Name string
	Recovery           bool
}

// verifyPage shows what the link is for. It changes nothing: mail
// scanners open links too.
func (c *Console) verifyPage(w http.ResponseWriter, r *http.Request) {
	secret := r.URL.Query().Get("token")
	t, err := c.tokenFor(r.Context(), secret)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "verify", pageData{Title: "Create your passkey", Body: verifyBody{
		Token: secret, Email: t.Email, Name: t.Name, Recovery: t.Purpose == authstate.EmailTokenRecovery,
	}})
}

// ownerForToken returns the owner a link acts for. A sign-up link creates
// its owner (email verified: the link proves it) the first time a passkey
// ceremony starts, so the passkey's user handle can be the owner id.
func (c *Console) ownerForToken(ctx context.Context, t *authstate.EmailToken) (string, error) {
	if t.OwnerID != nil {
		return *t.OwnerID, nil
	}
	o, err := c.svc.Accounts.CreateOwner(ctx, t.Email, t.Name, true)
	if err != nil {
		if core.ErrorCode(err) == accounts.CodeOwnerExists {
			// Another tab of the same sign-up may have won the race.
			if again, gerr := c.store.GetEmailToken(ctx, t.Hash); gerr == nil && again.OwnerID != nil {
				return *again.OwnerID, nil
			}
			return "", core.Errorf(core.KindConflict, accounts.CodeOwnerExists, "an account with %s exists already; sign in, or recover it from the sign-in page", t.Email)
		}
		return "", err
	}
	if err := c.store.SetEmailTokenOwner(ctx, t.Hash, o.ID); err != nil {
		return "", err
	}
	return o.ID, nil
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
	t, err := c.tokenFor(ctx, req.Token)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	ownerID, err := c.ownerForToken(ctx, t)
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
	t, err := c.tokenFor(ctx, req.Token)
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
	err = c.store.InPasskeyTx(ctx, func(ps authstate.PasskeyQueries) error {
		if _, err := ps.ClaimEmailToken(ctx, t.Hash, t.Purpose, c.now()); err != nil {
			if errors.Is(err, core.ErrConflict) {
				return core.Errorf(core.KindGone, codeLinkInvalid, "this link was used already; sign in with your passkey, or request a new link")
			}
			return err
		}
		return c.storePasskey(ctx, ps, pk)
	})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if t.Purpose == authstate.EmailTokenRecovery {
		// Whoever holds the lost device is signed out.
		if err := c.svc.Accounts.EndAllSessions(ctx, u.o.ID); err != nil {
			c.fail(w, r, err)
			return
		}
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
