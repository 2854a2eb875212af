package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/token/jwt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/web"
)

// consentBinding is the exact authorization request an owner approves; its
// hash is the approval's binding, checked again when the request resumes.
type consentBinding struct {
	ClientID      string   `json:"client_id"`
	RedirectURI   string   `json:"redirect_uri"`
	Scopes        []string `json:"scopes"`
	Resource      string   `json:"resource"`
	State         string   `json:"state"`
	Nonce         string   `json:"nonce"`
	CodeChallenge string   `json:"code_challenge"`
}

// issWriter adds the RFC 9207 iss parameter to fosite's authorization
// redirects, successful or not.
type issWriter struct {
	http.ResponseWriter
	iss string
}

func (w issWriter) WriteHeader(code int) {
	if code >= 300 && code < 400 {
		if loc, err := url.Parse(w.Header().Get("Location")); err == nil && loc.Fragment == "" {
			q := loc.Query()
			q.Set("iss", w.iss)
			loc.RawQuery = q.Encode()
			w.Header().Set("Location", loc.String())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (s *Server) writeAuthorizeError(ctx context.Context, w http.ResponseWriter, ar fosite.AuthorizeRequester, err error) {
	var rfc *fosite.RFC6749Error
	if errors.As(err, &rfc) && rfc.CodeField >= 500 {
		s.log.ErrorContext(ctx, "authorize", "err", err, "debug", rfc.DebugField)
	}
	if ar == nil {
		web.WriteOAuthError(w, http.StatusBadRequest, "invalid_request", "the authorization request is not valid")
		return
	}
	s.provider.WriteAuthorizeError(ctx, issWriter{w, s.issuer}, ar, err)
}

func errInvalidTarget(hint string) *fosite.RFC6749Error {
	return &fosite.RFC6749Error{
		ErrorField: "invalid_target", DescriptionField: "The requested resource is invalid, unknown, or malformed.",
		HintField: hint, CodeField: http.StatusBadRequest,
	}
}

func mcpOAuthOff(w http.ResponseWriter, s *Server) {
	web.WriteOAuthError(w, http.StatusForbidden, "access_denied", "MCP OAuth is disabled on this server (--mcp-oauth off); use an API key or agent registration (see "+s.guideURL()+")")
}

// checkAuthorize applies faxhub's rules that fosite leaves open: one
// known resource (RFC 8707), PKCE S256 checked before the owner is
// bothered, the query response mode (where iss goes), no prompt=none (an
// owner always decides). It returns the resource.
func (s *Server) checkAuthorize(ar fosite.AuthorizeRequester) (string, error) {
	form := ar.GetRequestForm()
	switch m, c := form.Get("code_challenge_method"), form.Get("code_challenge"); {
	case c == "":
		return "", fosite.ErrInvalidRequest.WithHint("PKCE is required: send code_challenge with code_challenge_method=S256.")
	case m != "S256":
		return "", fosite.ErrInvalidRequest.WithHintf("code_challenge_method must be S256, got %q.", m)
	case !validCodeChallenge(c):
		return "", fosite.ErrInvalidRequest.WithHint("code_challenge must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_' and '~' (RFC 7636 section 4.2: the base64url SHA-256 of the verifier).")
	}
	if rm := form.Get("response_mode"); rm != "" && rm != "query" {
		return "", fosite.ErrInvalidRequest.WithHint("Only response_mode=query is supported.")
	}
	if slices.Contains(strings.Fields(form.Get("prompt")), "none") {
		return "", fosite.ErrConsentRequired.WithHint("The owner must approve every authorization; prompt=none cannot be honoured.")
	}
	res := form["resource"]
	switch {
	case len(res) == 0:
		// Clients that predate RFC 8707 in MCP get the MCP server.
		return s.resources[0], nil
	case len(res) > 1:
		return "", errInvalidTarget("Request exactly one resource.")
	case !slices.Contains(s.resources, res[0]):
		return "", errInvalidTarget(fmt.Sprintf("Unknown resource %q; use %s.", res[0], strings.Join(s.resources, " or ")))
	}
	return res[0], nil
}

// validCodeChallenge applies RFC 7636's syntax for a code challenge (and
// verifier): 43 to 128 unreserved characters. An S256 challenge is 43
// base64url characters; anything else could never match a verifier, so the
// owner is not asked to approve it.
func validCodeChallenge(c string) bool {
	if len(c) < 43 || len(c) > 128 {
		return false
	}
	for i := 0; i < len(c); i++ {
		switch b := c[i]; {
		case b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z', b >= '0' && b <= '9', b == '-', b == '.', b == '_', b == '~':
		default:
			return false
		}
	}
	return true
}

// requestedScopes are the request's scopes, or the defaults when it names
// none.
func requestedScopes(ar fosite.AuthorizeRequester) []string {
	var out []string
	for _, sc := range ar.GetRequestedScopes() {
		if sc != "" && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return defaultScopes()
	}
	return out
}

func (s *Server) bindingOf(ar fosite.AuthorizeRequester, resource string) consentBinding {
	f := ar.GetRequestForm()
	return consentBinding{
		ClientID: ar.GetClient().GetID(), RedirectURI: f.Get("redirect_uri"), Scopes: requestedScopes(ar),
		Resource: resource, State: f.Get("state"), Nonce: f.Get("nonce"), CodeChallenge: f.Get("code_challenge"),
	}
}

// ownerSession returns the signed-in owner's session, or nil.
func (s *Server) ownerSession(r *http.Request) (*accounts.Session, error) {
	return web.OwnerSession(r, s.svc.Accounts)
}

// redirectToSignIn sends the browser to the console's sign-in page, on
// the origin it came to, to come back here.
func (s *Server) redirectToSignIn(w http.ResponseWriter, r *http.Request) {
	next := r.URL.EscapedPath()
	if r.Method == http.MethodPost {
		// The request continues as a GET with the same parameters.
		next += "?" + r.Form.Encode()
	} else if r.URL.RawQuery != "" {
		next += "?" + r.URL.RawQuery
	}
	signIn, err := s.path("passkeys.signinPage")
	if err != nil {
		s.log.ErrorContext(r.Context(), "authorize: the sign-in page", "err", err)
		web.WriteOAuthError(w, http.StatusInternalServerError, "server_error", "the sign-in page is not available")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, signIn+"?next="+url.QueryEscape(next), http.StatusSeeOther)
}

// consentURL is the console's page of the consent approval, on the origin
// the request came to, which returns to resume once decided.
func (s *Server) consentURL(approvalID string) (string, error) {
	resume, err := s.path("oauth.authorizeResume")
	if err != nil {
		return "", err
	}
	page, err := s.path("passkeys.approval", "id", approvalID)
	if err != nil {
		return "", err
	}
	return page + "?return=" + url.QueryEscape(resume+"?approval="+url.QueryEscape(approvalID)), nil
}

// authorize validates the request, sends an owner who is not signed in to
// sign in, and parks the request behind an oauth_consent approval.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !s.opts.MCPOAuth {
		mcpOAuthOff(w, s)
		return
	}
	// Checked before fosite reads the request: with a parameter given
	// twice (client_id, redirect_uri, …) it is unclear where an error
	// could be redirected, so the answer is a JSON error here.
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		web.WriteOAuthError(w, http.StatusBadRequest, "invalid_request", "the authorization request's parameters cannot be read (a form of at most 64 KB)")
		return
	}
	if p := formProblem(r.Form, "resource"); p != "" {
		web.WriteOAuthError(w, http.StatusBadRequest, "invalid_request", p)
		return
	}
	if err := s.resolveClient(ctx, r.Form.Get("client_id")); err != nil {
		writeCoreError(w, err)
		return
	}
	ar, err := s.provider.NewAuthorizeRequest(ctx, r)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, err)
		return
	}
	resource, err := s.checkAuthorize(ar)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, err)
		return
	}
	sess, err := s.ownerSession(r)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	if sess == nil {
		s.redirectToSignIn(w, r)
		return
	}
	c, err := s.store.GetOAuthClient(ctx, ar.GetClient().GetID())
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	b := s.bindingOf(ar, resource)
	name := c.Name
	if name == "" {
		name = c.ID
	}
	a, err := s.svc.Approvals.Request(ctx, approvals.Request{
		OwnerID: sess.OwnerID, Kind: approvals.KindOAuthConsent, Requester: name,
		Summary: fmt.Sprintf("%s asks to use your faxhub account through %s (%s)", name, resource, strings.Join(b.Scopes, " ")),
		Details: approvals.ConsentDetails{
			ClientID: c.ID, ClientName: name, ClientURI: c.URI, LogoURI: c.LogoURI, RedirectURI: b.RedirectURI,
			Scopes: b.Scopes, Resource: resource,
		},
		Binding: b, TTL: consentTTL,
	})
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	now := s.now()
	if err := s.store.CreateOAuthConsent(ctx, &authstate.OAuthConsent{
		ApprovalID: a.ID, OwnerID: sess.OwnerID, ClientID: c.ID, Query: ar.GetRequestForm().Encode(),
		CreatedAt: now, ExpiresAt: now.Add(consentTTL + time.Minute),
	}); err != nil {
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	consent, err := s.consentURL(a.ID)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, consent, http.StatusSeeOther)
}

// resume finishes an authorization once the owner has decided its consent.
func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !s.opts.MCPOAuth {
		mcpOAuthOff(w, s)
		return
	}
	if p := formProblem(r.URL.Query()); p != "" {
		web.WriteOAuthError(w, http.StatusBadRequest, "invalid_request", p)
		return
	}
	id := r.URL.Query().Get("approval")
	sess, err := s.ownerSession(r)
	if err != nil {
		s.log.ErrorContext(ctx, "resume: session", "err", err)
		web.WriteOAuthError(w, http.StatusInternalServerError, "server_error", "the session could not be checked")
		return
	}
	if sess == nil {
		s.redirectToSignIn(w, r)
		return
	}
	unknown := func() {
		web.WriteOAuthError(w, http.StatusBadRequest, "invalid_request", "this authorization request is unknown, was completed already, or belongs to another account; start again from the app")
	}
	// Both lookups are by owner: another owner's approval reads as unknown.
	pending, err := s.store.GetOAuthConsent(ctx, sess.OwnerID, id)
	if errors.Is(err, core.ErrNoRows) {
		unknown()
		return
	} else if err != nil {
		s.log.ErrorContext(ctx, "resume: consent", "err", err)
		web.WriteOAuthError(w, http.StatusInternalServerError, "server_error", "the authorization request could not be read")
		return
	}
	a, err := s.svc.Approvals.Get(ctx, sess.OwnerID, id)
	if err != nil || a.Kind != approvals.KindOAuthConsent {
		unknown()
		return
	}
	// Rebuild the parked request and let fosite validate it again: the
	// client may have changed its redirect URIs meanwhile.
	q, err := url.ParseQuery(pending.Query)
	if err != nil {
		unknown()
		return
	}
	replay := r.Clone(ctx)
	replay.Method, replay.Body, replay.Form, replay.PostForm = http.MethodGet, http.NoBody, nil, nil
	replay.URL.RawQuery = q.Encode()
	ar, err := s.provider.NewAuthorizeRequest(ctx, replay)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, err)
		return
	}
	resource, err := s.checkAuthorize(ar)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, err)
		return
	}
	b := s.bindingOf(ar, resource)
	if approvals.BindingHash(b) != a.BindingHash {
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("The request changed since the owner decided it."))
		return
	}
	switch a.Status {
	case approvals.Pending:
		consent, err := s.consentURL(a.ID)
		if err != nil {
			s.writeAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, consent, http.StatusSeeOther)
		return
	case approvals.Approved, approvals.Declined, approvals.Expired:
	default:
		unknown()
		return
	}
	// One decision, one answer: a replayed resume finds nothing.
	if err := s.store.DeleteOAuthConsent(ctx, sess.OwnerID, id); errors.Is(err, core.ErrNoRows) {
		unknown()
		return
	} else if err != nil {
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	switch a.Status {
	case approvals.Declined:
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("The owner declined the request."))
		return
	case approvals.Expired:
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("The owner did not decide in time."))
		return
	}
	granted := narrow(b.Scopes, a.Decision)
	g, err := s.upsertGrant(ctx, sess.OwnerID, b.ClientID, resource, granted)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	for _, sc := range granted {
		ar.GrantScope(sc)
	}
	ar.GrantAudience(resource)
	fs, err := s.newOwnerSession(ctx, sess, g, granted)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	resp, err := s.provider.NewAuthorizeResponse(ctx, ar, fs)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, err)
		return
	}
	s.provider.WriteAuthorizeResponse(ctx, issWriter{w, s.issuer}, ar, resp)
}

// narrow returns the requested scopes the owner kept. A decision without
// data approves what was asked; a decision can only remove scopes
// (core.KeptScopes: the console checked it with core.NarrowScopes when the
// owner decided, and applying it never widens whatever was recorded).
func narrow(requested []string, decision json.RawMessage) []string {
	if len(decision) == 0 || string(decision) == "null" {
		return requested
	}
	var d approvals.ConsentDecision
	if err := json.Unmarshal(decision, &d); err != nil || d.Scopes == nil {
		return requested
	}
	return core.KeptScopes(requested, d.Scopes)
}

// upsertGrant records the owner's consent: the live grant for the client
// and resource takes the newly granted scopes, or a new grant is made.
func (s *Server) upsertGrant(ctx context.Context, ownerID, clientID, resource string, scopes []string) (*authstate.OAuthGrant, error) {
	now := s.now()
	for range 2 {
		g, err := s.store.FindOAuthGrant(ctx, ownerID, clientID, resource)
		switch {
		case err == nil:
			if err := s.store.UpdateOAuthGrantScopes(ctx, g.ID, scopes, now); err != nil && !errors.Is(err, core.ErrNoRows) {
				return nil, err
			} else if err == nil {
				g.Scopes = scopes
				return g, nil
			}
			// Revoked meanwhile: make a new one.
		case !errors.Is(err, core.ErrNoRows):
			return nil, err
		}
		g = &authstate.OAuthGrant{
			ID: core.NewID(core.PrefixOAuthGrant), OwnerID: ownerID, ClientID: clientID, Scopes: scopes, Resource: resource,
			CreatedAt: now, UpdatedAt: now,
		}
		err = s.store.CreateOAuthGrant(ctx, g)
		if err == nil {
			return g, nil
		}
		if !errors.Is(err, core.ErrExists) {
			return nil, err
		}
		// A concurrent consent created it: update that one.
	}
	return nil, errors.New("grant changed concurrently")
}

// newOwnerSession builds the fosite session of an authorization: the owner,
// the grant, and id_token claims limited to the granted profile and email
// scopes.
func (s *Server) newOwnerSession(ctx context.Context, sess *accounts.Session, g *authstate.OAuthGrant, scopes []string) (*session, error) {
	owner, err := s.svc.Accounts.Owner(ctx, sess.OwnerID)
	if err != nil {
		return nil, fmt.Errorf("owner: %w", err)
	}
	now := time.Now().UTC()
	extra := map[string]interface{}{}
	if slices.Contains(scopes, ScopeProfile) && owner.Name != "" {
		extra["name"] = owner.Name
	}
	if slices.Contains(scopes, ScopeEmail) {
		extra["email"] = owner.Email
		extra["email_verified"] = owner.EmailVerifiedAt != nil
	}
	fs := newSession()
	fs.OwnerID, fs.GrantID = owner.ID, g.ID
	fs.Subject = owner.ID
	fs.Claims = &jwt.IDTokenClaims{
		Subject: owner.ID, Issuer: s.issuer, AuthTime: sess.CreatedAt.UTC(), RequestedAt: now, IssuedAt: now, Extra: extra,
	}
	fs.Headers = &jwt.Headers{Extra: map[string]interface{}{}}
	return fs, nil
}
