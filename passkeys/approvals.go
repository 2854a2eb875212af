package passkeys

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/authstate"
)

// approvalView is an approval as the inbox shows it.
type approvalView struct {
	approvals.Approval
	KindLabel string
	Consent   *consentView
	Facts     []fact
	Decided   bool
	CSRF      string
	Return    string
	// DevicePath is set on a delegated agent's device approval: approving
	// happens on that page, with the agent's code.
	DevicePath string
	// FaxSend is set on a delegated agent's send_fax: approved only with
	// the passkey, and paid from credits then.
	FaxSend *faxSendView
	// Pages are a pending fax's pages as they will be faxed, on the
	// approval's own page (previewing every card of the inbox would
	// compose each fax on every visit); the inbox card links there.
	Pages *pagesView
}

type consentView struct {
	approvals.ConsentDetails
	RedirectHost string
	ScopeList    []scopeInfo
}

type fact struct{ Label, Value string }

var kindLabels = map[approvals.Kind]string{
	approvals.KindOAuthConsent:   "App access",
	approvals.KindAgentClaim:     "Agent claim",
	approvals.KindDevice:         "Agent device approval",
	approvals.KindFaxSend:        "Fax to send",
	approvals.KindChatSend:       "Fax to send from a chat app",
	approvals.KindVerifiedAction: "Action to confirm",
	approvals.KindCreditPurchase: "Credit purchase",
}

func (c *Console) view(a approvals.Approval, csrf, ret string) approvalView {
	v := approvalView{Approval: a, KindLabel: kindLabels[a.Kind], CSRF: csrf, Return: ret, Decided: a.Status != approvals.Pending}
	if v.KindLabel == "" {
		v.KindLabel = strings.ReplaceAll(string(a.Kind), "_", " ")
	}
	if a.Kind == approvals.KindOAuthConsent {
		var d approvals.ConsentDetails
		if err := json.Unmarshal(a.Details, &d); err == nil {
			cv := &consentView{ConsentDetails: d, ScopeList: describeScopes(d.Scopes)}
			if u, err := url.Parse(d.RedirectURI); err == nil {
				cv.RedirectHost = u.Host
			}
			v.Consent = cv
			return v
		}
	}
	switch a.Kind {
	case approvals.KindDevice:
		if id := deviceAgentID(&a); id != "" {
			v.DevicePath = devicePath(id)
		}
	case approvals.KindFaxSend:
		v.FaxSend, v.Facts = faxSendFacts(a.Details, c.svc.Config().AgentMode)
		return v
	}
	v.Facts = facts(a.Details)
	return v
}

// facts flattens an approval's details into labelled lines, so that every
// kind (including ones added later) shows exactly what is asked.
func facts(raw json.RawMessage) []fact {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		if len(raw) > 0 && string(raw) != "null" {
			return []fact{{"Details", string(raw)}}
		}
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]fact, 0, len(keys))
	for _, k := range keys {
		out = append(out, fact{Label: humanKey(k), Value: humanValue(m[k])})
	}
	return out
}

func humanKey(k string) string {
	var b strings.Builder
	for i, r := range k {
		switch {
		case r == '_' || r == '-':
			b.WriteRune(' ')
		case r >= 'A' && r <= 'Z' && i > 0:
			b.WriteRune(' ')
			b.WriteRune(r + ('a' - 'A'))
		case i == 0 && r >= 'a' && r <= 'z':
			b.WriteRune(r - ('a' - 'A'))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func humanValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "—"
	case string:
		return x
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = humanValue(e)
		}
		return strings.Join(parts, ", ")
	case float64:
		return fmt.Sprint(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

type approvalsBody struct{ Approvals []approvalView }

func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	pending, err := c.svc.Approvals.ListPending(r.Context(), s.owner.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b := approvalsBody{}
	for _, a := range pending {
		b.Approvals = append(b.Approvals, c.view(a, s.csrf, ""))
	}
	d := c.page(s, "Approvals", "approvals", b)
	d.Pending = len(pending)
	switch r.URL.Query().Get("done") {
	case "approved":
		d.Notice = "Approved."
	case "declined":
		d.Notice = "Declined."
	}
	c.render(w, r, http.StatusOK, "approvals", d)
}

func (c *Console) approvalPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	a, err := c.svc.Approvals.Get(r.Context(), s.owner.ID, r.PathValue("id"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v := c.view(*a, s.csrf, approvalReturn(r.URL.Query().Get("return")))
	if a.Kind == approvals.KindFaxSend && a.Status == approvals.Pending {
		// The pages the passkey approves, beside the facts. A preview that
		// cannot be made says why and never blocks the decision.
		pv, err := c.svc.Hosts.PreviewSend(r.Context(), s.owner.ID, a.ID)
		v.Pages = previewPages(pv, err)
	}
	if a.Kind == approvals.KindChatSend && a.Status == approvals.Pending {
		pv, err := c.svc.Faxes.PreviewChatSend(r.Context(), s.owner.ID, a)
		v.Pages = previewPages(pv, err)
	}
	c.render(w, r, http.StatusOK, "approval", c.page(s, "Approval request", "approvals", struct{ Approval approvalView }{v}))
}

// decisionData is what the owner granted. For a consent it is the scopes
// the owner left ticked: a subset of what the app asked, never more.
func decisionData(a *approvals.Approval, scopes []string) (any, error) {
	if a.Kind != approvals.KindOAuthConsent {
		return nil, nil
	}
	var d approvals.ConsentDetails
	if err := json.Unmarshal(a.Details, &d); err != nil {
		return nil, fmt.Errorf("decode consent details: %w", err)
	}
	if scopes == nil {
		// No box ticked sends no scope field at all: that is an empty
		// choice here, not "everything asked" (core.NarrowScopes' nil).
		scopes = []string{}
	}
	granted, err := core.NarrowScopes(d.Scopes, scopes, func(s string) *core.Error {
		return core.Errorf(core.KindInvalid, core.CodeInsufficientScope,
			"%s did not ask for %q: you can narrow what an app asks for, never widen it", d.ClientName, s).With("scope", s)
	})
	if err != nil {
		return nil, err
	}
	if len(granted) == 0 {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "tick at least one permission, or decline")
	}
	return approvals.ConsentDecision{Scopes: granted}, nil
}

func afterDecision(ret string, approved bool) string {
	if p := approvalReturn(ret); p != "" {
		return p
	}
	if approved {
		return "/console/approvals?done=approved"
	}
	return "/console/approvals?done=declined"
}

// decide is the no-JavaScript path: declining anything, and approving what
// does not need user verification.
func (c *Console) decide(w http.ResponseWriter, r *http.Request, s *signedIn) {
	ctx := r.Context()
	id := r.PathValue("id")
	a, err := c.svc.Approvals.Get(ctx, s.owner.ID, id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	var approve bool
	switch r.PostFormValue("decision") {
	case "approve":
		approve = true
	case "decline":
	default:
		c.fail(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "choose approve or decline"))
		return
	}
	// Agent claims and device approvals are approved on their own page
	// with the code: core refuses approving their inbox item, and declining
	// it declines the claim or the agent (their approvals.Handler).
	d := approvals.Decision{Approve: approve, BindingHash: r.PostFormValue("binding")}
	if approve {
		if a.RequiresUV {
			c.fail(w, r, core.Errorf(core.KindForbidden, approvals.CodeUserVerification, "approving this needs your passkey: use the “Approve with passkey” button"))
			return
		}
		if d.Data, err = decisionData(a, r.PostForm["scope"]); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	if _, err := c.svc.Approvals.Decide(ctx, s.owner.ID, id, d); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, afterDecision(r.PostFormValue("return"), approve), http.StatusSeeOther)
}

// approvalBegin issues a challenge for exactly this approval as the owner
// saw it: purpose approval:<id>, bound to the binding hash on the page.
func (c *Console) approvalBegin(w http.ResponseWriter, r *http.Request, s *signedIn) {
	ctx := r.Context()
	req, err := readCeremony(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	a, err := c.svc.Approvals.Get(ctx, s.owner.ID, r.PathValue("id"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if err := pendingAndBound(a, req.Binding); err != nil {
		c.fail(w, r, err)
		return
	}
	u, err := c.loadOwner(ctx, s.owner.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if len(u.keys) == 0 {
		c.fail(w, r, core.Errorf(core.KindForbidden, approvals.CodeUserVerification, "your account has no passkey; add one on the account page first"))
		return
	}
	assertion, sd, err := c.wa.BeginLogin(u, webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		c.fail(w, r, fmt.Errorf("begin approval assertion: %w", err))
		return
	}
	if err := c.saveChallenge(ctx, sd, authstate.ApprovalChallengePurpose(a.ID), &s.owner.ID, a.BindingHash); err != nil {
		c.fail(w, r, err)
		return
	}
	writeOptions(w, assertion)
}

func pendingAndBound(a *approvals.Approval, binding string) error {
	if a.Status != approvals.Pending {
		return core.Errorf(core.KindConflict, approvals.CodeApprovalState, "this request is already %s", a.Status)
	}
	if !sameString(binding, a.BindingHash) {
		return core.Errorf(core.KindConflict, approvals.CodeApprovalBinding, "the request changed since it was shown; reload and decide again")
	}
	return nil
}

// approvalFinish approves with a WebAuthn assertion: made with user
// verification, by one of the owner's passkeys, over a challenge issued for
// this approval while it had the binding hash it still has.
func (c *Console) approvalFinish(w http.ResponseWriter, r *http.Request, s *signedIn) {
	ctx := r.Context()
	id := r.PathValue("id")
	req, err := readCeremony(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	var a *approvals.Approval
	_, ch, pk, err := c.finishAssertion(ctx, req, ceremony{purpose: authstate.ApprovalChallengePurpose(id), owner: s.owner.ID, what: "approval",
		bound: func(ch *authstate.WebAuthnChallenge) error {
			var err error
			if a, err = c.svc.Approvals.Get(ctx, s.owner.ID, id); err != nil {
				return err
			}
			return pendingAndBound(a, ch.Binding)
		}})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	data, err := decisionData(a, req.Scopes)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if _, err := c.svc.Approvals.Decide(ctx, s.owner.ID, id, approvals.Decision{
		Approve: true, BindingHash: ch.Binding, UserVerified: true, Data: data,
	}); err != nil {
		c.fail(w, r, insufficientCredits(a, c.svc.Config().AgentMode, err))
		return
	}
	c.log.InfoContext(ctx, "approval approved with passkey", "owner_id", s.owner.ID, "approval_id", id, "passkey_id", pk.ID,
		"kind", string(a.Kind))
	writeRedirect(w, afterDecision(req.Return, true))
}
