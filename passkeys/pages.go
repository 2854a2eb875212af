package passkeys

import (
	"errors"
	"net/http"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/mail"
	"github.com/faxhub/faxhub/core/web"
)

func (c *Console) page(s *signedIn, title, nav string, body any) pageData {
	return pageData{Title: title, Owner: s.owner, CSRF: s.csrf, Nav: nav, Body: body}
}

type dashboardBody struct {
	Mode     core.Mode
	Balances []credits.Balance
	Faxes    []faxes.Fax
	Pending  int
	Packs    []core.CreditPack
	// Alert is the low-balance alert of Mode; Threshold what the form
	// shows in its field (what the owner typed, after a refusal).
	Alert     *credits.Alert
	Threshold string
}

func (c *Console) dashboard(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode := core.ModeTest
	if m := r.URL.Query().Get("mode"); m != "" {
		pm, err := core.ParseMode(m)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		mode = pm
	}
	c.showDashboard(w, r, s, mode, http.StatusOK, "", "", nil)
}

// showDashboard renders the dashboard of mode; typed, when set, is the
// threshold the owner typed into a form that was refused.
func (c *Console) showDashboard(w http.ResponseWriter, r *http.Request, s *signedIn, mode core.Mode, status int, notice, errMsg string, typed *string) {
	ctx := r.Context()
	b := dashboardBody{Mode: mode, Packs: c.svc.Credits.Packs()}
	alert, err := c.svc.Credits.Alert(ctx, core.OwnerPrincipal(s.owner.ID, mode))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b.Alert = alert
	if alert.Threshold != nil {
		b.Threshold = *alert.Threshold
	}
	if typed != nil {
		b.Threshold = *typed
	}
	for _, m := range []core.Mode{core.ModeTest, core.ModeLive} {
		bal, err := c.svc.Credits.Balance(ctx, s.owner.ID, m)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		b.Balances = append(b.Balances, *bal)
	}
	page, err := c.svc.Faxes.List(ctx, core.OwnerPrincipal(s.owner.ID, mode), faxes.ListRequest{Limit: 20})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b.Faxes = page.Data
	pending, err := c.svc.Approvals.ListPending(ctx, s.owner.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b.Pending = len(pending)
	d := c.page(s, "Dashboard", "dashboard", b)
	d.Pending = b.Pending
	d.Notice, d.Error = notice, errMsg
	c.render(w, r, status, "dashboard", d)
}

// setCreditAlert sets (or, with an empty field, turns off) the
// low-balance alert of the form's mode: the same rule as PUT
// /api/v1/credits/alert (credits.Service.SetAlert). A refused threshold
// shows the dashboard again with what was typed and why.
func (c *Console) setCreditAlert(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := core.ParseMode(r.PostFormValue("mode"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	typed := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.PostFormValue("threshold")), "$"))
	var threshold *string
	if typed != "" {
		threshold = &typed
	}
	a, err := c.svc.Credits.SetAlert(r.Context(), core.OwnerPrincipal(s.owner.ID, mode), threshold)
	if err != nil {
		if e := core.AsError(err); e.Kind != core.KindInternal {
			c.showDashboard(w, r, s, mode, statusOf(e.Kind), "", e.Message, &typed)
			return
		}
		c.fail(w, r, err)
		return
	}
	notice := "Low-balance alert turned off for " + string(mode) + " mode."
	if a.Threshold != nil {
		notice = "You will be told (credits.low) when the " + string(mode) + " balance falls below $" + *a.Threshold + "."
	}
	c.showDashboard(w, r, s, mode, http.StatusOK, notice, "", nil)
}

// buyCredits starts a hosted checkout for a credit pack in the chosen
// mode (where a fax approval the balance does not cover sends the owner).
func (c *Console) buyCredits(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := core.ParseMode(r.PostFormValue("mode"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	cs, err := c.svc.Checkout.StartCreditPack(r.Context(), core.OwnerPrincipal(s.owner.ID, mode), r.PostFormValue("pack"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, cs.CheckoutURL, http.StatusSeeOther)
}

type keysBody struct {
	Keys    []accounts.APIKey
	Secret  string
	NewMode core.Mode
}

func (c *Console) keysPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	c.showKeys(w, r, s, http.StatusOK, keysBody{}, "", "")
}

func (c *Console) showKeys(w http.ResponseWriter, r *http.Request, s *signedIn, status int, b keysBody, notice, errMsg string) {
	keys, err := c.svc.Accounts.ListAPIKeys(r.Context(), s.owner.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b.Keys = keys
	d := c.page(s, "API keys", "keys", b)
	d.Notice, d.Error = notice, errMsg
	c.render(w, r, status, "keys", d)
}

// createKey answers with the page itself, not a redirect: the secret is
// shown in this one response and stored nowhere.
func (c *Console) createKey(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := core.ParseMode(r.PostFormValue("mode"))
	if err != nil {
		c.showKeys(w, r, s, http.StatusBadRequest, keysBody{}, "", "Choose test or live mode.")
		return
	}
	secret, _, err := c.svc.Accounts.CreateAPIKey(r.Context(), s.owner.ID, mode, strings.TrimSpace(r.PostFormValue("name")))
	if err != nil {
		if e := core.AsError(err); e.Kind != core.KindInternal {
			c.showKeys(w, r, s, statusOf(e.Kind), keysBody{}, "", e.Message)
			return
		}
		c.fail(w, r, err)
		return
	}
	c.showKeys(w, r, s, http.StatusOK, keysBody{Secret: secret, NewMode: mode}, "", "")
}

func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if err := c.svc.Accounts.RevokeAPIKey(r.Context(), s.owner.ID, r.PathValue("id")); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/keys", http.StatusSeeOther)
}

// scopeInfo is a scope and what it lets an app do, in plain words.
type scopeInfo struct{ Name, Description string }

var scopeText = map[string]string{
	string(core.ScopeFaxRead):         "See your faxes and whether they were delivered",
	string(core.ScopeFaxDraft):        "Upload documents, get prices and prepare faxes (without sending them)",
	string(core.ScopeFaxSend):         "Send faxes, paid from your credits",
	string(core.ScopeInboxRead):       "Read faxes you receive",
	string(core.ScopeCreditsRead):     "See your credit balance and its history",
	string(core.ScopeCreditsCheckout): "Start credit purchases (you still pay on a checkout page)",
	"openid":                          "Know your faxhub account id",
	"profile":                         "See your name",
	"email":                           "See your email address",
	"offline_access":                  "Stay connected while you are away (until you revoke it)",
}

func describeScopes(scopes []string) []scopeInfo {
	out := make([]scopeInfo, 0, len(scopes))
	for _, s := range scopes {
		d, ok := scopeText[s]
		if !ok {
			d = "Permission “" + s + "”"
		}
		out = append(out, scopeInfo{Name: s, Description: d})
	}
	return out
}

type grantView struct {
	core.Grant
	Scopes []scopeInfo
}

func (c *Console) appsPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	var views []grantView
	if c.opts.Grants != nil {
		grants, err := c.opts.Grants.ListGrants(r.Context(), s.owner.ID)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		for _, g := range grants {
			views = append(views, grantView{Grant: g, Scopes: describeScopes(g.Scopes)})
		}
	}
	d := c.page(s, "Connected apps", "apps", struct{ Grants []grantView }{views})
	if r.URL.Query().Get("revoked") != "" {
		d.Notice = "Access revoked. The app's tokens no longer work."
	}
	c.render(w, r, http.StatusOK, "apps", d)
}

func (c *Console) revokeApp(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if c.opts.Grants == nil {
		c.fail(w, r, core.Errorf(core.KindNotFound, core.CodeNotFound, "app not found"))
		return
	}
	if err := c.opts.Grants.RevokeGrant(r.Context(), s.owner.ID, r.PathValue("id")); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/apps?revoked=1", http.StatusSeeOther)
}

type accountBody struct {
	Owner    *accounts.Owner
	Passkeys []authstate.Passkey
}

func (c *Console) accountPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	c.showAccount(w, r, s, http.StatusOK, "", "")
}

func (c *Console) showAccount(w http.ResponseWriter, r *http.Request, s *signedIn, status int, notice, errMsg string) {
	keys, err := c.store.ListPasskeys(r.Context(), s.owner.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := c.page(s, "Account", "account", accountBody{Owner: s.owner, Passkeys: keys})
	d.Notice, d.Error = notice, errMsg
	switch r.URL.Query().Get("done") {
	case "added":
		d.Notice = "Passkey added."
	case "renamed":
		d.Notice = "Passkey renamed."
	case "removed":
		d.Notice = "Passkey removed."
	}
	c.render(w, r, status, "account", d)
}

func (c *Console) renamePasskey(w http.ResponseWriter, r *http.Request, s *signedIn) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	if name == "" || len(name) > 100 {
		c.showAccount(w, r, s, http.StatusBadRequest, "", "A passkey name must be 1 to 100 characters.")
		return
	}
	err := c.store.RenamePasskey(r.Context(), s.owner.ID, r.PathValue("id"), name)
	if errors.Is(err, core.ErrNoRows) {
		err = core.Errorf(core.KindNotFound, core.CodeNotFound, "passkey not found")
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/account?done=renamed", http.StatusSeeOther)
}

func (c *Console) deletePasskey(w http.ResponseWriter, r *http.Request, s *signedIn) {
	err := c.store.DeletePasskey(r.Context(), s.owner.ID, r.PathValue("id"))
	switch {
	case errors.Is(err, core.ErrConflict):
		c.showAccount(w, r, s, http.StatusConflict, "", "You cannot remove your last passkey: add another one first.")
		return
	case errors.Is(err, core.ErrNoRows):
		err = core.Errorf(core.KindNotFound, core.CodeNotFound, "passkey not found")
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/account?done=removed", http.StatusSeeOther)
}

func (c *Console) addPasskeyBegin(w http.ResponseWriter, r *http.Request, s *signedIn) {
	ctx := r.Context()
	if _, err := readCeremony(w, r); err != nil {
		c.fail(w, r, err)
		return
	}
	u, err := c.loadOwner(ctx, s.owner.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	creation, sd, err := c.wa.BeginRegistration(u, webauthnExclusions(u))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if err := c.saveChallenge(ctx, sd, authstate.ChallengeRegistration, &s.owner.ID, ""); err != nil {
		c.fail(w, r, err)
		return
	}
	writeOptions(w, creation)
}

func (c *Console) addPasskeyFinish(w http.ResponseWriter, r *http.Request, s *signedIn) {
	ctx := r.Context()
	req, err := readCeremony(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	_, cred, err := c.finishRegistration(ctx, req, ceremony{purpose: authstate.ChallengeRegistration, owner: s.owner.ID, what: "registration"})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	pk := c.newPasskey(s.owner.ID, req.Name, cred)
	if err := c.storePasskey(ctx, c.store, pk); err != nil {
		c.fail(w, r, err)
		return
	}
	writeRedirect(w, "/console/account?done=added")
}

type mailboxBody struct{ Messages []mail.Message }

func (c *Console) mailboxPage(w http.ResponseWriter, r *http.Request) {
	// The mailbox holds sign-in and recovery links: whoever reads it can
	// take over the accounts in it. Only a peer on this machine may, judged
	// by the client address (the socket's, or a trusted proxy's
	// X-Forwarded-For: web.ClientIP), never by a header anyone can send.
	if !web.LoopbackHost(r.RemoteAddr) {
		http.NotFound(w, r)
		return
	}
	var msgs []mail.Message
	if mb, ok := c.opts.Mailer.(interface{ Messages() []mail.Message }); ok {
		msgs = mb.Messages()
	}
	c.render(w, r, http.StatusOK, "mailbox", pageData{Title: "Dev mailbox", Nav: "mailbox", Body: mailboxBody{Messages: msgs}})
}
