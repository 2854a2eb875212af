package oauth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v3"

	"github.com/faxhub/faxhub/core"
)

// Agent registration with owner approval (spec, Authentication section 3;
// docs/agents.md). The handlers here sit beside the authorization server:
// the claim and jwt-bearer grants are dispatched by the token endpoint
// before fosite sees the request.
const (
	PathAgentManage   = "/api/auth/agent/identity/manage"
	PathAgentIdentity = "/api/auth/agent/identity"
	PathAgentClaim    = "/api/auth/agent/identity/claim"
	PathAgentRevoke   = "/api/auth/agent/identity/revoke"
	// PathAgentClaimPage is where the owner enters the user code; the
	// rest of the path is the secret claim-attempt token. passkeys/ serves it.
	PathAgentClaimPage = "/agent/claim/"

	GrantTypeAgentClaim = "urn:faxhub:agent-auth:grant-type:claim"
	GrantTypeJWTBearer  = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	AssertionType       = "oauth-id-jag+jwt"

	// Secret prefixes: an agent access token is recognised by its prefix.
	prefixEnrollment   = "fxe_"
	prefixClaimToken   = "fxc_"
	prefixAttempt      = "fxt_"
	prefixAgentAccess  = "fxa_"
	enrollInterval     = 30 * time.Second
	enrollBurst        = 10
	maxAgentJSONBytes  = 16 << 10
	maxAgentNameLength = 100
)

// Agent registration error codes (spec, Errors).
const (
	CodeEnrollmentRequired = "enrollment_required"
	CodeInvalidEnrollment  = "invalid_enrollment"
	CodeLoginHintMismatch  = "login_hint_mismatch"
	CodeEmailMismatch      = "email_mismatch"
)

func newSecret(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func newUserCode() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1_000_000))
	return fmt.Sprintf("%06d", n.Int64())
}

// agentStore is the store's agent port; nil when the store lacks it.
func (s *Server) agentStore() core.AgentStore {
	a, _ := s.store.(core.AgentStore)
	return a
}

func (s *Server) mcpResource() string { return s.opts.BaseURL + "/mcp" }

func readAgentJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxAgentJSONBytes)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "invalid_request", "the body must be application/json")
		return false
	}
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body is not valid JSON")
		return false
	}
	return true
}

func (s *Server) agentUnavailable(w http.ResponseWriter) bool {
	if s.agentStore() == nil {
		writeError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "agent registration is not available")
		return true
	}
	return false
}

func (s *Server) serverError(ctx context.Context, w http.ResponseWriter, what string, err error) {
	s.log.ErrorContext(ctx, what, "err", err)
	writeError(w, http.StatusInternalServerError, "server_error", what+" failed")
}

// validScopes checks that every scope is a fax scope.
func validScopes(scopes []string) bool {
	for _, sc := range scopes {
		if !slices.Contains(core.FaxScopes, core.Scope(sc)) {
			return false
		}
	}
	return true
}

// ---- Owner side: enrollment tokens and registrations ----

// CreateEnrollment issues an enrollment token for ownerID: rate-limited
// per owner across replicas, at most five live unused at once.
func (s *Server) CreateEnrollment(ctx context.Context, ownerID, name string, scopes []string) (*core.AgentEnrollmentSecret, error) {
	a := s.agentStore()
	if a == nil {
		return nil, core.Errorf(core.KindUnavailable, "unavailable", "agent registration is not available")
	}
	name = strings.TrimSpace(name)
	if name == "" || len(name) > maxAgentNameLength {
		return nil, core.Errorf(core.KindInvalid, "invalid_request", "the agent name is required (at most %d characters)", maxAgentNameLength)
	}
	if len(scopes) == 0 {
		scopes = defaultScopes()
	}
	if !validScopes(scopes) {
		return nil, core.Errorf(core.KindInvalid, "invalid_scope", "scopes must be among %v", core.FaxScopes)
	}
	scopes = slices.Compact(slices.Sorted(slices.Values(scopes)))
	now := s.now()
	ok, wait, err := s.svc.Store.AllowRate(ctx, "agent-enroll:"+ownerID, now, enrollInterval, enrollBurst)
	if err != nil {
		return nil, err
	}
	if !ok {
		e := core.Errorf(core.KindRateLimited, core.CodeRateLimited, "too many enrollment tokens; retry in %d s", max(int(wait/time.Second), 1))
		e.RetryAfterSeconds = max(int(wait/time.Second), 1)
		return nil, e
	}
	secret := newSecret(prefixEnrollment)
	e := &core.AgentEnrollment{ID: core.NewID("aen_"), OwnerID: ownerID, Name: name, Scopes: scopes, TokenHash: hashKey(secret),
		CreatedAt: now, ExpiresAt: now.Add(core.AgentEnrollmentTTL)}
	if err := a.CreateAgentEnrollment(ctx, e, core.AgentMaxLiveEnrollments); errors.Is(err, core.ErrConflict) {
		return nil, core.Errorf(core.KindConflict, "too_many_enrollments", "you already have %d live unused enrollment tokens; revoke one or wait for it to expire", core.AgentMaxLiveEnrollments)
	} else if err != nil {
		return nil, err
	}
	return &core.AgentEnrollmentSecret{EnrollmentToken: secret, ID: e.ID, Name: name, Scopes: scopes, ExpiresAt: e.ExpiresAt}, nil
}

// ListEnrollments lists the owner's live unused enrollment tokens.
func (s *Server) ListEnrollments(ctx context.Context, ownerID string) ([]core.AgentEnrollment, error) {
	if s.agentStore() == nil {
		return nil, nil
	}
	return s.agentStore().ListAgentEnrollments(ctx, ownerID, s.now())
}

// RevokeEnrollment revokes a live unused enrollment token.
func (s *Server) RevokeEnrollment(ctx context.Context, ownerID, id string) error {
	err := s.agentStore().RevokeAgentEnrollment(ctx, ownerID, id, s.now())
	if errors.Is(err, core.ErrNoRows) {
		return core.Errorf(core.KindNotFound, core.CodeNotFound, "no live enrollment token with that id")
	}
	return err
}

// ListRegistrations lists the owner's agent registrations.
func (s *Server) ListRegistrations(ctx context.Context, ownerID string) ([]core.AgentRegistration, error) {
	if s.agentStore() == nil {
		return nil, nil
	}
	return s.agentStore().ListAgentRegistrations(ctx, ownerID)
}

// RevokeRegistration revokes one of the owner's registrations: its access
// tokens and further assertion exchanges stop.
func (s *Server) RevokeRegistration(ctx context.Context, ownerID, id string) error {
	err := s.agentStore().RevokeAgentRegistration(ctx, ownerID, id, s.now())
	if errors.Is(err, core.ErrNoRows) {
		return core.Errorf(core.KindNotFound, core.CodeNotFound, "no active agent registration with that id")
	}
	return err
}

func writeCoreError(w http.ResponseWriter, err error) {
	var e *core.Error
	if !errors.As(err, &e) {
		writeError(w, http.StatusInternalServerError, "server_error", "the request failed")
		return
	}
	status := http.StatusBadRequest
	switch e.Kind {
	case core.KindNotFound:
		status = http.StatusNotFound
	case core.KindConflict:
		status = http.StatusConflict
	case core.KindRateLimited:
		status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", fmt.Sprint(e.RetryAfterSeconds))
	case core.KindUnauthenticated:
		status = http.StatusUnauthorized
	case core.KindForbidden:
		status = http.StatusForbidden
	case core.KindUnavailable:
		status = http.StatusServiceUnavailable
	}
	writeError(w, status, e.Code, e.Message)
}

var crossOrigin = http.NewCrossOriginProtection()

// manage is POST /api/auth/agent/identity/manage with the owner session.
func (s *Server) manage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if s.agentUnavailable(w) {
		return
	}
	if err := crossOrigin.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "invalid_request", "cross-origin requests are refused")
		return
	}
	sess, err := s.ownerSession(r)
	if err != nil {
		s.serverError(ctx, w, "session check", err)
		return
	}
	if sess == nil {
		writeError(w, http.StatusUnauthorized, "login_required", "sign in to the console first")
		return
	}
	var req struct {
		Action string   `json:"action"`
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
		ID     string   `json:"id"`
		Kind   string   `json:"kind"` // revoke: "enrollment" (default) or "registration"
	}
	if !readAgentJSON(w, r, &req) {
		return
	}
	switch req.Action {
	case "enroll":
		res, err := s.CreateEnrollment(ctx, sess.OwnerID, req.Name, req.Scopes)
		if err != nil {
			writeCoreError(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, res)
	case "list":
		es, err := s.ListEnrollments(ctx, sess.OwnerID)
		if err != nil {
			s.serverError(ctx, w, "list enrollments", err)
			return
		}
		rs, err := s.ListRegistrations(ctx, sess.OwnerID)
		if err != nil {
			s.serverError(ctx, w, "list registrations", err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"enrollments": nonNil(es), "registrations": nonNil(rs)})
	case "revoke":
		if req.Kind == "registration" {
			err = s.RevokeRegistration(ctx, sess.OwnerID, req.ID)
		} else {
			err = s.RevokeEnrollment(ctx, sess.OwnerID, req.ID)
		}
		if err != nil {
			writeCoreError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"revoked": req.ID})
	default:
		writeError(w, http.StatusBadRequest, "invalid_request", "action must be enroll, list or revoke")
	}
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// ---- Agent side ----

type claimAttempt struct {
	VerificationURI string    `json:"verification_uri"`
	UserCode        string    `json:"user_code,omitempty"`
	Interval        int       `json:"interval,omitempty"`
	Expires         time.Time `json:"expires"`
}

// startAttempt opens a new claim attempt (new link, new code, an inbox
// approval); the previous link stops working.
func (s *Server) startAttempt(ctx context.Context, c *core.AgentClaim, reg *core.AgentRegistration) (*claimAttempt, error) {
	attempt, code := newSecret(prefixAttempt), newUserCode()
	uri := s.opts.BaseURL + PathAgentClaimPage + attempt
	appr, err := s.svc.RequestApproval(ctx, core.ApprovalRequest{
		OwnerID: c.OwnerID, Kind: core.ApprovalAgentClaim, Requester: reg.Name,
		Summary: "Agent " + reg.Name + " asks for access: " + strings.Join(c.Scopes, " "),
		Details: AgentClaimDetails{RegistrationID: reg.ID, Name: reg.Name, Type: reg.Type, Scopes: c.Scopes},
		Binding: reg.ID, TTL: time.Until(c.ExpiresAt),
	})
	if err != nil {
		return nil, err
	}
	if err := s.agentStore().StartAgentClaimAttempt(ctx, c.RegistrationID, hashKey(attempt), hashKey(code), appr.ID); err != nil {
		return nil, err
	}
	if c.ApprovalID != "" {
		// The previous attempt's inbox item is superseded.
		if _, err := s.svc.DecideApproval(ctx, c.OwnerID, c.ApprovalID, core.Decision{BindingHash: core.BindingHash(reg.ID)}); err != nil && core.ErrorKind(err) != core.KindConflict {
			s.log.WarnContext(ctx, "agent claim: close superseded approval", "approval_id", c.ApprovalID, "err", err)
		}
	}
	return &claimAttempt{VerificationURI: uri, UserCode: code, Interval: c.Interval, Expires: c.ExpiresAt}, nil
}

// AgentClaimDetails is what an agent_claim approval shows (Approval.Details).
type AgentClaimDetails struct {
	RegistrationID string   `json:"registrationId"`
	Name           string   `json:"name"`
	Type           string   `json:"type"`
	Scopes         []string `json:"scopes"`
}

// identity is POST /api/auth/agent/identity: register with an enrollment token.
func (s *Server) identity(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if s.agentUnavailable(w) {
		return
	}
	var req struct {
		Type            string `json:"type"`
		EnrollmentToken string `json:"enrollment_token"`
		LoginHint       string `json:"login_hint"`
	}
	if !readAgentJSON(w, r, &req) {
		return
	}
	if req.EnrollmentToken == "" {
		writeError(w, http.StatusBadRequest, CodeEnrollmentRequired, "an enrollment token from the owner's Agent access page is required")
		return
	}
	a := s.agentStore()
	now := s.now()
	e, err := a.GetAgentEnrollmentByHash(ctx, hashKey(req.EnrollmentToken))
	if errors.Is(err, core.ErrNoRows) || (err == nil && !e.Live(now)) {
		writeError(w, http.StatusBadRequest, CodeInvalidEnrollment, "the enrollment token is unknown, expired, revoked or already used")
		return
	} else if err != nil {
		s.serverError(ctx, w, "agent registration", err)
		return
	}
	if req.Type != core.AgentRegistrationService && req.Type != core.AgentRegistrationAnon {
		writeError(w, http.StatusBadRequest, "invalid_request", "type must be service_auth or anonymous")
		return
	}
	owner, err := s.svc.Store.GetOwner(ctx, e.OwnerID)
	if err != nil {
		s.serverError(ctx, w, "agent registration", err)
		return
	}
	if req.Type == core.AgentRegistrationService && !strings.EqualFold(strings.TrimSpace(req.LoginHint), owner.Email) {
		writeError(w, http.StatusBadRequest, CodeLoginHintMismatch, "login_hint must be the email of the account that issued the enrollment token")
		return
	}
	claimToken := newSecret(prefixClaimToken)
	reg := &core.AgentRegistration{ID: core.NewID("agr_"), OwnerID: e.OwnerID, Type: req.Type, Name: e.Name, Scopes: e.Scopes,
		Status: core.AgentActive, CreatedAt: now}
	c := &core.AgentClaim{RegistrationID: reg.ID, OwnerID: e.OwnerID, TokenHash: hashKey(claimToken), Scopes: e.Scopes,
		Status: core.AgentClaimPending, CreatedAt: now, ExpiresAt: now.Add(core.AgentClaimTTL), Interval: core.AgentClaimInterval}
	if err := a.RegisterAgent(ctx, e.ID, reg, c); errors.Is(err, core.ErrConflict) {
		writeError(w, http.StatusBadRequest, CodeInvalidEnrollment, "the enrollment token is unknown, expired, revoked or already used")
		return
	} else if err != nil {
		s.serverError(ctx, w, "agent registration", err)
		return
	}
	if req.Type == core.AgentRegistrationAnon {
		assertion, _, err := s.issueAssertion(ctx, reg)
		if err != nil {
			s.serverError(ctx, w, "agent registration", err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"registration_id": reg.ID, "identity_assertion": assertion, "claim_token": claimToken})
		return
	}
	att, err := s.startAttempt(ctx, c, reg)
	if err != nil {
		s.serverError(ctx, w, "agent registration", err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"registration_id": reg.ID, "claim_token": claimToken, "expiry": c.ExpiresAt,
		"claim": map[string]any{"user_code": att.UserCode, "verification_uri": att.VerificationURI, "interval": core.AgentClaimInterval},
	})
}

// claim is POST /api/auth/agent/identity/claim: a new claim attempt.
func (s *Server) claim(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if s.agentUnavailable(w) {
		return
	}
	var req struct {
		ClaimToken string `json:"claim_token"`
		Email      string `json:"email"`
	}
	if !readAgentJSON(w, r, &req) {
		return
	}
	a := s.agentStore()
	c, err := a.GetAgentClaimByToken(ctx, hashKey(req.ClaimToken))
	if errors.Is(err, core.ErrNoRows) || req.ClaimToken == "" {
		writeError(w, http.StatusBadRequest, "invalid_grant", "the claim token is not valid")
		return
	} else if err != nil {
		s.serverError(ctx, w, "agent claim", err)
		return
	}
	if code, msg := claimStateError(c, s.now()); code != "" {
		writeError(w, http.StatusBadRequest, code, msg)
		return
	}
	owner, err := s.svc.Store.GetOwner(ctx, c.OwnerID)
	if err != nil {
		s.serverError(ctx, w, "agent claim", err)
		return
	}
	if !strings.EqualFold(strings.TrimSpace(req.Email), owner.Email) {
		writeError(w, http.StatusBadRequest, CodeEmailMismatch, "email must be the email of the account that issued the enrollment token")
		return
	}
	reg, err := a.GetAgentRegistration(ctx, c.RegistrationID)
	if err != nil {
		s.serverError(ctx, w, "agent claim", err)
		return
	}
	att, err := s.startAttempt(ctx, c, reg)
	if errors.Is(err, core.ErrConflict) {
		writeError(w, http.StatusBadRequest, "invalid_grant", "the claim is no longer pending")
		return
	} else if err != nil {
		s.serverError(ctx, w, "agent claim", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"claim_attempt": att})
}

// claimStateError maps a claim that cannot proceed to its error; expiry is
// checked first.
func claimStateError(c *core.AgentClaim, now time.Time) (string, string) {
	switch {
	case c.Status == core.AgentClaimExpired || (c.Status == core.AgentClaimPending && !now.Before(c.ExpiresAt)):
		return "expired_token", "the claim expired; register again with a new enrollment token"
	case c.Status == core.AgentClaimDenied:
		return "access_denied", "the owner declined"
	case c.Status == core.AgentClaimApproved, c.Status == core.AgentClaimRedeemed:
		return "invalid_grant", "the claim was approved already"
	}
	return "", ""
}

// agentToken serves the two agent grants at the token endpoint.
func (s *Server) agentToken(w http.ResponseWriter, r *http.Request, grantType string) {
	ctx := r.Context()
	if s.agentUnavailable(w) {
		return
	}
	resource := r.PostForm.Get("resource")
	if resource == "" {
		resource = s.mcpResource()
	}
	if resource != s.mcpResource() {
		writeError(w, http.StatusBadRequest, "invalid_target", "agent tokens are issued for "+s.mcpResource()+" only")
		return
	}
	if grantType == GrantTypeAgentClaim {
		s.claimGrant(ctx, w, r.PostForm.Get("claim_token"), resource)
		return
	}
	s.assertionGrant(ctx, w, r.PostForm.Get("assertion"), resource)
}

func (s *Server) claimGrant(ctx context.Context, w http.ResponseWriter, claimToken, resource string) {
	a := s.agentStore()
	if claimToken == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "claim_token is required")
		return
	}
	now := s.now()
	p, err := a.PollAgentClaim(ctx, hashKey(claimToken), now)
	if errors.Is(err, core.ErrNoRows) {
		writeError(w, http.StatusBadRequest, "invalid_grant", "the claim token is not valid")
		return
	} else if err != nil {
		s.serverError(ctx, w, "claim grant", err)
		return
	}
	c := p.Claim
	switch c.Status {
	case core.AgentClaimExpired:
		writeError(w, http.StatusBadRequest, "expired_token", "the claim expired; register again with a new enrollment token")
		return
	case core.AgentClaimDenied:
		writeError(w, http.StatusBadRequest, "access_denied", "the owner declined")
		return
	case core.AgentClaimRedeemed:
		writeError(w, http.StatusBadRequest, "invalid_grant", "the claim was redeemed already; exchange the identity assertion")
		return
	case core.AgentClaimPending:
		if p.SlowDown {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "slow_down", "error_description": "polling too fast", "interval": c.Interval})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "authorization_pending", "error_description": "the owner has not approved yet", "interval": c.Interval})
		return
	}
	// Approved: hand out the token once.
	if err := a.RedeemAgentClaim(ctx, c.RegistrationID); errors.Is(err, core.ErrConflict) {
		writeError(w, http.StatusBadRequest, "invalid_grant", "the claim was redeemed already")
		return
	} else if err != nil {
		s.serverError(ctx, w, "claim grant", err)
		return
	}
	reg, err := a.GetAgentRegistration(ctx, c.RegistrationID)
	if err == nil && reg.Status != core.AgentActive {
		writeError(w, http.StatusBadRequest, "invalid_grant", "the registration was revoked")
		return
	} else if err != nil {
		s.serverError(ctx, w, "claim grant", err)
		return
	}
	s.issueAgentTokens(ctx, w, reg, reg.Scopes, resource, true)
}

// issueAgentTokens writes a token response; withAssertion issues a new
// identity assertion (invalidating the previous one).
func (s *Server) issueAgentTokens(ctx context.Context, w http.ResponseWriter, reg *core.AgentRegistration, scopes []string, resource string, withAssertion bool) {
	now := s.now()
	token := newSecret(prefixAgentAccess)
	ttl := s.opts.AccessTokenLifespan
	ownerID := reg.OwnerID
	if !reg.Claimed && reg.Type == core.AgentRegistrationAnon && !withAssertion {
		ownerID = "" // a pre-claim anonymous token carries no account access
	}
	if err := s.agentStore().CreateAgentToken(ctx, &core.AgentToken{TokenHash: hashKey(token), RegistrationID: reg.ID, OwnerID: ownerID,
		Scopes: scopes, Resource: resource, CreatedAt: now, ExpiresAt: now.Add(ttl)}); err != nil {
		s.serverError(ctx, w, "agent token", err)
		return
	}
	out := map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": int(ttl / time.Second), "scope": strings.Join(scopes, " ")}
	if withAssertion {
		assertion, exp, err := s.issueAssertion(ctx, reg)
		if err != nil {
			s.serverError(ctx, w, "agent token", err)
			return
		}
		out["identity_assertion"], out["assertion_expires"] = assertion, exp.Unix()
	}
	_ = s.agentStore().TouchAgentRegistration(ctx, reg.ID, now)
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) assertionGrant(ctx context.Context, w http.ResponseWriter, assertion, resource string) {
	if assertion == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "assertion is required")
		return
	}
	reg, err := s.verifyAssertion(ctx, assertion)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_grant", err.Error())
		return
	}
	scopes := reg.Scopes
	if !reg.Claimed {
		scopes = []string{} // the pre-claim (anonymous) assertion: no scope, no account access
	}
	s.issueAgentTokens(ctx, w, reg, scopes, resource, false)
}

type assertionClaims struct {
	Iss      string `json:"iss"`
	Aud      string `json:"aud"`
	Sub      string `json:"sub"`
	ClientID string `json:"client_id"`
	JTI      string `json:"jti"`
	IAT      int64  `json:"iat"`
	Exp      int64  `json:"exp"`
}

// issueAssertion signs a new identity assertion for reg and records its
// jti: earlier assertions of reg stop being exchangeable.
func (s *Server) issueAssertion(ctx context.Context, reg *core.AgentRegistration) (string, time.Time, error) {
	key, err := s.keys.signingKey(ctx, AlgEdDSA)
	if err != nil {
		return "", time.Time{}, err
	}
	now := s.now()
	exp := now.Add(core.AgentAssertionTTL)
	cl := assertionClaims{Iss: s.issuer, Aud: s.issuer, Sub: reg.ID, ClientID: reg.ID, JTI: core.NewID("jti_"), IAT: now.Unix(), Exp: exp.Unix()}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key},
		(&jose.SignerOptions{}).WithType(AssertionType).WithHeader("kid", key.KeyID))
	if err != nil {
		return "", time.Time{}, err
	}
	payload, _ := json.Marshal(cl)
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", time.Time{}, err
	}
	jws, err := obj.CompactSerialize()
	if err != nil {
		return "", time.Time{}, err
	}
	if err := s.agentStore().SetAgentAssertion(ctx, reg.ID, cl.JTI, now); err != nil {
		return "", time.Time{}, err
	}
	return jws, exp, nil
}

// verifyAssertion checks an identity assertion this server issued and
// returns its active registration. External assertions are refused.
func (s *Server) verifyAssertion(ctx context.Context, assertion string) (*core.AgentRegistration, error) {
	bad := errors.New("the identity assertion is not valid, has expired or was superseded")
	obj, err := jose.ParseSigned(assertion)
	if err != nil || len(obj.Signatures) != 1 {
		return nil, bad
	}
	h := obj.Signatures[0].Header
	if h.Algorithm != string(jose.EdDSA) || h.ExtraHeaders["typ"] != AssertionType {
		return nil, bad
	}
	set, err := s.keys.jwks(ctx)
	if err != nil {
		return nil, err
	}
	keys := set.Key(h.KeyID)
	if len(keys) == 0 {
		return nil, errors.New("identity assertions of other issuers are not accepted")
	}
	pub, ok := keys[0].Key.(ed25519.PublicKey)
	if !ok {
		return nil, bad
	}
	payload, err := obj.Verify(pub)
	if err != nil {
		return nil, bad
	}
	var cl assertionClaims
	if err := json.Unmarshal(payload, &cl); err != nil {
		return nil, bad
	}
	if cl.Iss != s.issuer || cl.Aud != s.issuer {
		return nil, errors.New("identity assertions of other issuers are not accepted")
	}
	if s.now().Unix() >= cl.Exp {
		return nil, errors.New("the identity assertion expired; register again")
	}
	reg, err := s.agentStore().GetAgentRegistration(ctx, cl.Sub)
	if err != nil || reg.Status != core.AgentActive || reg.AssertionJTI != cl.JTI {
		return nil, bad
	}
	return reg, nil
}

// revokeIdentity is POST /api/auth/agent/identity/revoke.
func (s *Server) revokeIdentity(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if s.agentUnavailable(w) {
		return
	}
	var req struct {
		IdentityAssertion string `json:"identity_assertion"`
	}
	if !readAgentJSON(w, r, &req) {
		return
	}
	reg, err := s.verifyAssertion(ctx, req.IdentityAssertion)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_grant", err.Error())
		return
	}
	if err := s.agentStore().RevokeAgentRegistration(ctx, "", reg.ID, s.now()); err != nil && !errors.Is(err, core.ErrNoRows) {
		s.serverError(ctx, w, "revoke registration", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"revoked": reg.ID})
}

// revokeAgentToken revokes one agent access token (RFC 7009: idempotent).
func (s *Server) revokeAgentToken(ctx context.Context, w http.ResponseWriter, token string) {
	if a := s.agentStore(); a != nil {
		if err := a.DeleteAgentToken(ctx, hashKey(token)); err != nil {
			s.serverError(ctx, w, "revoke", err)
			return
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// verifyAgentToken is VerifyAccessToken for agent access tokens.
func (s *Server) verifyAgentToken(ctx context.Context, token, audience string) (core.Principal, error) {
	a := s.agentStore()
	if a == nil {
		return core.Principal{}, invalidToken("the access token is not valid")
	}
	t, err := a.GetAgentToken(ctx, hashKey(token))
	if errors.Is(err, core.ErrNoRows) {
		return core.Principal{}, invalidToken("the access token is not valid, has expired or was revoked")
	} else if err != nil {
		return core.Principal{}, err
	}
	now := s.now()
	if !now.Before(t.ExpiresAt) {
		return core.Principal{}, invalidToken("the access token has expired; exchange the identity assertion for a new one")
	}
	if audience == "" || t.Resource != audience {
		return core.Principal{}, invalidToken("the access token was issued for another resource")
	}
	reg, err := a.GetAgentRegistration(ctx, t.RegistrationID)
	if err != nil || reg.Status != core.AgentActive {
		return core.Principal{}, invalidToken("the agent registration was revoked")
	}
	var scopes []core.Scope
	for _, sc := range t.Scopes {
		if slices.Contains(reg.Scopes, sc) {
			scopes = append(scopes, core.Scope(sc))
		}
	}
	if reg.LastUsedAt == nil || now.Sub(*reg.LastUsedAt) > grantTouchEvery {
		_ = a.TouchAgentRegistration(ctx, reg.ID, now)
	}
	return core.Principal{OwnerID: t.OwnerID, Kind: core.PrincipalAgent, Mode: core.ModeLive, Scopes: scopes,
		SubjectID: reg.ID, ClientID: reg.Name, Audience: audience}, nil
}
