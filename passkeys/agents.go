package passkeys

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/web"
)

// Agent access (spec, Authentication section 3): the console page where
// the owner issues enrollment tokens and manages agent registrations, and
// the claim page at the verification_uri an agent hands its owner.

type agentsBody struct {
	Secret        *agents.EnrollmentSecret
	SecretScopes  []scopeInfo
	AllScopes     []scopeInfo
	Enrollments   []enrollmentView
	Registrations []registrationView
}

type enrollmentView struct {
	agents.Enrollment
	ScopeList []scopeInfo
}

type registrationView struct {
	agents.Registration
	ScopeList []scopeInfo
}

func fixedScopes() []string {
	var out []string
	for _, s := range core.FaxScopes() {
		out = append(out, string(s))
	}
	return out
}

// claimView is what the claim page shows.
type claimView struct {
	Name      string
	Type      string
	ExpiresAt time.Time
	TriesLeft int
}

func (c *Console) agentsPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	c.showAgents(w, r, s, http.StatusOK, nil, "", "")
}

func (c *Console) showAgents(w http.ResponseWriter, r *http.Request, s *signedIn, status int, secret *agents.EnrollmentSecret, notice, errMsg string) {
	ctx := r.Context()
	body := agentsBody{Secret: secret, AllScopes: describeScopes(fixedScopes())}
	if secret != nil {
		body.SecretScopes = describeScopes(secret.Scopes)
	}
	es, err := c.svc.Agents.ListEnrollments(ctx, s.owner.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for _, e := range es {
		body.Enrollments = append(body.Enrollments, enrollmentView{e, describeScopes(e.Scopes)})
	}
	rs, err := c.svc.Agents.ListRegistrations(ctx, s.owner.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for _, g := range rs {
		body.Registrations = append(body.Registrations, registrationView{g, describeScopes(g.Scopes)})
	}
	d := c.page(s, "Agent access", "agents", body)
	d.Notice, d.Error = notice, errMsg
	c.render(w, r, status, "agents", d)
}

func (c *Console) createEnrollment(w http.ResponseWriter, r *http.Request, s *signedIn) {
	name := r.PostFormValue("name")
	problem := ""
	if p := web.DisplayTextProblem(name); p != "" {
		problem = "The agent name " + p + "; use plain text."
	}
	for _, sc := range r.PostForm["scope"] {
		if p := web.DisplayTextProblem(sc); p != "" && problem == "" {
			problem = "A scope " + p + "."
		}
	}
	if problem != "" {
		c.showAgents(w, r, s, http.StatusBadRequest, nil, "", problem)
		return
	}
	secret, err := c.svc.Agents.CreateEnrollment(r.Context(), s.owner.ID, name, r.PostForm["scope"])
	if err != nil {
		if e := core.AsError(err); e.Kind != core.KindInternal {
			if e.RetryAfterSeconds > 0 {
				w.Header().Set("Retry-After", itoa(e.RetryAfterSeconds))
			}
			c.showAgents(w, r, s, statusOf(e.Kind), nil, "", e.Message)
			return
		}
		c.fail(w, r, err)
		return
	}
	c.showAgents(w, r, s, http.StatusOK, secret, "", "")
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func (c *Console) revokeEnrollment(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if err := c.svc.Agents.RevokeEnrollment(r.Context(), s.owner.ID, r.PathValue("id")); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/agents?revoked=token", http.StatusSeeOther)
}

func (c *Console) revokeRegistration(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if err := c.svc.Agents.RevokeRegistration(r.Context(), s.owner.ID, r.PathValue("id")); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/agents?revoked=agent", http.StatusSeeOther)
}

type claimBody struct {
	Action    string
	View      *claimView
	ScopeList []scopeInfo
	Done      string // "approved" or "declined"
}

// claimError renders the claim page's clear error pages.
func (c *Console) claimError(w http.ResponseWriter, r *http.Request, s *signedIn, err error) {
	e := core.AsError(err)
	if e.Kind == core.KindInternal {
		c.fail(w, r, err)
		return
	}
	title := map[string]string{
		agents.CodeClaimLinkInvalid:  "This link no longer works",
		agents.CodeClaimWrongOwner:   "Wrong account",
		agents.CodeClaimExpired:      "This request expired",
		agents.CodeClaimDecided:      "Already decided",
		agents.CodeClaimTooManyTries: "Too many wrong codes",
	}[e.Code]
	if title == "" {
		title = titleFor(statusOf(e.Kind))
	}
	d := c.page(s, title, "agents", nil)
	d.ErrorTitle, d.Error = title, e.Message
	c.render(w, r, statusOf(e.Kind), "error", d)
}

func (c *Console) claimPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	c.showClaim(w, r, s, http.StatusOK, "")
}

func (c *Console) showClaim(w http.ResponseWriter, r *http.Request, s *signedIn, status int, errMsg string) {
	tok := r.PathValue("token")
	req, err := c.svc.Agents.ClaimForOwner(r.Context(), s.owner.ID, tok)
	if err != nil {
		c.claimError(w, r, s, err)
		return
	}
	v := &claimView{Name: req.Registration.Name, Type: req.Registration.Type, ExpiresAt: req.ExpiresAt, TriesLeft: req.TriesLeft}
	d := c.page(s, "Approve agent "+v.Name, "agents", claimBody{Action: core.LinkClaimPage.PathPrefix() + tok, View: v, ScopeList: describeScopes(req.Scopes)})
	d.Error = errMsg
	c.render(w, r, status, "agentclaim", d)
}

func (c *Console) decideClaim(w http.ResponseWriter, r *http.Request, s *signedIn) {
	tok := r.PathValue("token")
	var approve bool
	switch r.PostFormValue("decision") {
	case "approve":
		approve = true
	case "decline":
	default:
		c.showClaim(w, r, s, http.StatusBadRequest, "Choose approve or decline.")
		return
	}
	scopes := r.PostForm["scope"]
	if approve && len(scopes) == 0 {
		c.showClaim(w, r, s, http.StatusBadRequest, "Tick at least one permission, or decline.")
		return
	}
	code := strings.TrimSpace(r.PostFormValue("user_code"))
	err := c.svc.Agents.DecideClaim(r.Context(), s.owner.ID, tok, code, approve, scopes)
	if err != nil {
		switch core.ErrorCode(err) {
		case agents.CodeClaimWrongCode, agents.CodeClaimScopeWiden:
			c.showClaim(w, r, s, statusOf(core.ErrorKind(err)), core.AsError(err).Message)
		default:
			c.claimError(w, r, s, err)
		}
		return
	}
	done := "declined"
	if approve {
		done = "approved"
	}
	d := c.page(s, "Agent "+done, "agents", claimBody{Done: done})
	if approve {
		d.Notice = "Approved. The agent receives its access on its next poll."
	} else {
		d.Notice = "Declined. The agent gets no access."
	}
	c.render(w, r, http.StatusOK, "agentclaim", d)
}
