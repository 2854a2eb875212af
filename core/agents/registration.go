package agents

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
)

// AgentNameMax bounds an agent's name.
const AgentNameMax = 100

// DefaultScopes are granted when an enrollment names none: read-only.
func DefaultScopes() []string {
	return []string{string(core.ScopeFaxRead), string(core.ScopeCreditsRead)}
}

// EnrollmentSecret is a newly issued enrollment token: the secret is
// shown to the owner once.
type EnrollmentSecret struct {
	EnrollmentToken string    `json:"enrollment_token"`
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	Scopes          []string  `json:"scopes"`
	ExpiresAt       time.Time `json:"expires_at"`
}

// normalizeScopes checks that every scope is a product scope and returns
// them sorted, without duplicates.
func normalizeScopes(scopes []string) ([]string, error) {
	for _, sc := range scopes {
		if !slices.Contains(core.FaxScopes(), core.Scope(sc)) {
			return nil, core.Errorf(core.KindInvalid, CodeInvalidScope, "scopes must be among %v", core.FaxScopes())
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(scopes))), nil
}

// CreateEnrollment issues an enrollment token for ownerID: rate
// limited per owner across replicas, at most AgentMaxLiveEnrollments live
// unused at once, scopes defaulting to DefaultAgentScopes.
func (s *Service) CreateEnrollment(ctx context.Context, ownerID, name string, scopes []string) (*EnrollmentSecret, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > AgentNameMax {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the agent name is required (at most %d characters)", AgentNameMax)
	}
	if len(scopes) == 0 {
		scopes = DefaultScopes()
	}
	scopes, err := normalizeScopes(scopes)
	if err != nil {
		return nil, err
	}
	if err := s.kernel.Allow(ctx, core.LimitAgentEnroll, ownerID); err != nil {
		if e := core.AsError(err); e.Kind == core.KindRateLimited {
			return nil, core.Errorf(core.KindRateLimited, core.CodeRateLimited, "too many enrollment tokens; retry in %d s", e.RetryAfterSeconds).WithRetryAfter(e.RetryAfterSeconds)
		}
		return nil, err
	}
	now := s.now()
	secret := core.NewSecret(core.SecretEnrollment)
	e := &Enrollment{ID: core.NewID(core.PrefixAgentEnrollment), OwnerID: ownerID, Name: name, Scopes: scopes, TokenHash: core.HashSecret(secret),
		CreatedAt: now, ExpiresAt: now.Add(EnrollmentTTL)}
	if err := s.d.Store.CreateAgentEnrollment(ctx, e, MaxLiveEnrollments); errors.Is(err, core.ErrConflict) {
		return nil, core.Errorf(core.KindConflict, CodeTooManyEnrollments, "you already have %d live unused enrollment tokens; revoke one or wait for it to expire", MaxLiveEnrollments)
	} else if err != nil {
		return nil, fmt.Errorf("create agent enrollment: %w", err)
	}
	return &EnrollmentSecret{EnrollmentToken: secret, ID: e.ID, Name: name, Scopes: scopes, ExpiresAt: e.ExpiresAt}, nil
}

// ListEnrollments lists the owner's live unused enrollment tokens.
func (s *Service) ListEnrollments(ctx context.Context, ownerID string) ([]Enrollment, error) {
	es, err := s.d.Store.ListAgentEnrollments(ctx, ownerID, s.now())
	if err != nil {
		return nil, fmt.Errorf("list agent enrollments: %w", err)
	}
	return NonNil(es), nil
}

// RevokeEnrollment revokes a live unused enrollment token.
func (s *Service) RevokeEnrollment(ctx context.Context, ownerID, id string) error {
	err := s.d.Store.RevokeAgentEnrollment(ctx, ownerID, id, s.now())
	if errors.Is(err, core.ErrNoRows) {
		return core.Errorf(core.KindNotFound, core.CodeNotFound, "no live enrollment token with that id")
	}
	return err
}

// ListRegistrations lists the owner's agent registrations.
func (s *Service) ListRegistrations(ctx context.Context, ownerID string) ([]Registration, error) {
	rs, err := s.d.Store.ListAgentRegistrations(ctx, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list agent registrations: %w", err)
	}
	return NonNil(rs), nil
}

// RevokeRegistration revokes one of the owner's registrations (any
// owner's when ownerID is empty: the agent revoking itself with a verified
// assertion): its access tokens and further assertion exchanges stop.
func (s *Service) RevokeRegistration(ctx context.Context, ownerID, id string) error {
	by := RevokedByOwner
	if ownerID == "" {
		by = RevokedByAgent
	}
	err := s.revoke(ctx, ownerID, id, by)
	if isNotActive(err) {
		return core.Errorf(core.KindNotFound, core.CodeNotFound, "no active agent registration with that id")
	}
	return err
}

// RegisterRequest is the body of the registration call.
type RegisterRequest struct {
	Type            string
	EnrollmentToken string
	LoginHint       string
}

// ClaimAttempt is one claim attempt: a link to the owner's claim page
// (carrying a secret attempt token) and the six-digit code the owner types
// there.
type ClaimAttempt struct {
	VerificationURI string    `json:"verification_uri"`
	UserCode        string    `json:"user_code,omitempty"`
	Interval        int       `json:"interval,omitempty"`
	Expires         time.Time `json:"expires"`
}

// Registered is the result of a registration. Attempt is set for
// service_auth; an anonymous registration gets an identity assertion from
// the adapter instead.
type Registered struct {
	Registration *Registration
	ClaimToken   string
	ClaimExpires time.Time
	Attempt      *ClaimAttempt
}

// Register registers an agent with an owner's enrollment token. The
// token is consumed only by a registration that succeeds.
func (s *Service) Register(ctx context.Context, r RegisterRequest) (*Registered, error) {
	if r.EnrollmentToken == "" {
		return nil, core.Errorf(core.KindInvalid, CodeEnrollmentRequired, "an enrollment token from the owner's Agent access page is required")
	}
	invalid := core.Errorf(core.KindInvalid, CodeInvalidEnrollment, "the enrollment token is unknown, expired, revoked or already used")
	now := s.now()
	e, err := s.d.Store.GetAgentEnrollmentByHash(ctx, core.HashSecret(r.EnrollmentToken))
	if errors.Is(err, core.ErrNoRows) || (err == nil && !e.Live(now)) {
		return nil, invalid
	} else if err != nil {
		return nil, fmt.Errorf("agent registration: %w", err)
	}
	if r.Type != TypeService && r.Type != TypeAnonymous {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "type must be service_auth or anonymous")
	}
	owner, err := s.accounts.Owner(ctx, e.OwnerID)
	if err != nil {
		return nil, fmt.Errorf("agent registration: %w", err)
	}
	if r.Type == TypeService && !strings.EqualFold(strings.TrimSpace(r.LoginHint), owner.Email) {
		return nil, core.Errorf(core.KindInvalid, CodeLoginHintMismatch, "login_hint must be the email of the account that issued the enrollment token")
	}
	claimToken := core.NewSecret(core.SecretClaim)
	reg := &Registration{ID: core.NewID(core.PrefixAgentRegistration), OwnerID: e.OwnerID, Type: r.Type, Name: e.Name, Scopes: e.Scopes,
		Status: Active, CreatedAt: now}
	c := &Claim{RegistrationID: reg.ID, OwnerID: e.OwnerID, TokenHash: core.HashSecret(claimToken), Scopes: e.Scopes,
		Status: ClaimPending, CreatedAt: now, ExpiresAt: now.Add(ClaimTTL), Interval: ClaimInterval}
	if err := s.register(ctx, e.ID, reg, c); errors.Is(err, core.ErrConflict) {
		return nil, invalid
	} else if err != nil {
		return nil, fmt.Errorf("agent registration: %w", err)
	}
	out := &Registered{Registration: reg, ClaimToken: claimToken, ClaimExpires: c.ExpiresAt}
	if r.Type == TypeService {
		if out.Attempt, err = s.startClaimAttempt(ctx, c, reg); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AgentClaimDetails is what an agent_claim approval shows (Approval.Details).
type AgentClaimDetails struct {
	RegistrationID string   `json:"registrationId"`
	Name           string   `json:"name"`
	Type           string   `json:"type"`
	Scopes         []string `json:"scopes"`
}

// startClaimAttempt opens a new claim attempt (new link, new code, an inbox
// approval); the previous link stops working.
func (s *Service) startClaimAttempt(ctx context.Context, c *Claim, reg *Registration) (*ClaimAttempt, error) {
	attempt := core.NewSecret(core.SecretClaimAttempt)
	code, codeHash, appr, err := s.codes.Start(ctx, nil, approvals.Request{
		OwnerID: c.OwnerID, Requester: reg.Name,
		Summary: "Agent " + reg.Name + " asks for access: " + strings.Join(c.Scopes, " "),
		Details: AgentClaimDetails{RegistrationID: reg.ID, Name: reg.Name, Type: reg.Type, Scopes: c.Scopes},
		Binding: reg.ID, TTL: c.ExpiresAt.Sub(s.now()),
	})
	if err != nil {
		return nil, err
	}
	if err := s.d.Store.StartAgentClaimAttempt(ctx, c.RegistrationID, core.HashSecret(attempt), codeHash, appr.ID); errors.Is(err, core.ErrConflict) {
		return nil, core.Errorf(core.KindInvalid, CodeInvalidGrant, "the claim is no longer pending")
	} else if err != nil {
		return nil, fmt.Errorf("start agent claim attempt: %w", err)
	}
	// The previous attempt's inbox item is superseded.
	if err := s.codes.Retire(ctx, nil, c.OwnerID, c.ApprovalID); err != nil {
		s.d.Logger.WarnContext(ctx, "agent claim: close superseded approval", "approval_id", c.ApprovalID, "err", err)
	}
	return &ClaimAttempt{VerificationURI: s.kernel.URL(core.LinkClaimPage, nil, "token", attempt), UserCode: code, Interval: c.Interval, Expires: c.ExpiresAt}, nil
}

// claimStateError is the error of a claim that cannot proceed; expiry is
// checked first. Nil for a pending, unexpired claim.
func claimStateError(c *Claim, now time.Time) error {
	switch {
	case c.Status == ClaimExpired || (c.Status == ClaimPending && !now.Before(c.ExpiresAt)):
		return core.Errorf(core.KindInvalid, CodeExpiredToken, "the claim expired; register again with a new enrollment token")
	case c.Status == ClaimDenied:
		return core.Errorf(core.KindInvalid, CodeAccessDenied, "the owner declined")
	case c.Status == ClaimApproved, c.Status == ClaimRedeemed:
		return core.Errorf(core.KindInvalid, CodeInvalidGrant, "the claim was approved already")
	}
	return nil
}

var errBadClaimToken = core.Errorf(core.KindInvalid, CodeInvalidGrant, "the claim token is not valid")

// StartClaim starts a new claim attempt for the agent holding
// claimToken; email must be the enrolling owner's.
func (s *Service) StartClaim(ctx context.Context, claimToken, email string) (*ClaimAttempt, error) {
	if claimToken == "" {
		return nil, errBadClaimToken
	}
	c, err := s.d.Store.GetAgentClaimByToken(ctx, core.HashSecret(claimToken))
	if errors.Is(err, core.ErrNoRows) {
		return nil, errBadClaimToken
	} else if err != nil {
		return nil, fmt.Errorf("agent claim: %w", err)
	}
	if err := claimStateError(c, s.now()); err != nil {
		return nil, err
	}
	owner, err := s.accounts.Owner(ctx, c.OwnerID)
	if err != nil {
		return nil, fmt.Errorf("agent claim: %w", err)
	}
	if !strings.EqualFold(strings.TrimSpace(email), owner.Email) {
		return nil, core.Errorf(core.KindInvalid, CodeEmailMismatch, "email must be the email of the account that issued the enrollment token")
	}
	reg, err := s.d.Store.GetAgentRegistration(ctx, c.RegistrationID)
	if err != nil {
		return nil, fmt.Errorf("agent claim: %w", err)
	}
	// Each attempt puts an item in the owner's inbox (superseding the last)
	// and mails nothing, but it is still the owner's attention: bounded
	// per registration.
	if err := s.kernel.Allow(ctx, core.LimitAgentClaimAttempt, c.RegistrationID); err != nil {
		return nil, err
	}
	return s.startClaimAttempt(ctx, c, reg)
}

// Tokens is what the claim and jwt-bearer grants hand out: an opaque
// access token (shown once) for Resource with Scopes. For a grant that
// needs a new identity assertion, NewAssertion is set and the adapter signs
// one and records it with RecordAgentAssertion.
type Tokens struct {
	Registration *Registration
	AccessToken  string
	ExpiresIn    time.Duration
	Scopes       []string
	NewAssertion bool
}

// agentResource checks the resource an agent token is asked for: the MCP
// server (the default) or the A2A endpoint.
func (s *Service) agentResource(resource string) (string, error) {
	switch resource {
	case "":
		return s.kernel.ResourceMCP(), nil
	case s.kernel.ResourceMCP(), s.kernel.ResourceA2A():
		return resource, nil
	}
	return "", core.Errorf(core.KindInvalid, CodeInvalidTarget, "agent tokens are issued for %s or %s", s.kernel.ResourceMCP(), s.kernel.ResourceA2A())
}

// PollClaim is one poll of the claim grant: authorization_pending
// (slow_down, with a longer interval, when it comes sooner than the
// interval after the last poll), expired_token, access_denied, or, once
// the owner approved, the agent's tokens (handed out once).
func (s *Service) PollClaim(ctx context.Context, claimToken, resource string) (*Tokens, error) {
	resource, err := s.agentResource(resource)
	if err != nil {
		return nil, err
	}
	if claimToken == "" {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "claim_token is required")
	}
	var c *Claim
	var slowDown bool
	now := s.now()
	err = s.inTx(ctx, func(tx Tx) error {
		var err error
		if c, err = tx.LockAgentClaim(ctx, core.HashSecret(claimToken)); err != nil {
			return err
		}
		switch {
		case c.Status == ClaimPending && !now.Before(c.ExpiresAt):
			c.Status = ClaimExpired
		case c.Status == ClaimPending:
			if c.LastPollAt != nil && now.Before(c.LastPollAt.Add(time.Duration(c.Interval)*time.Second)) {
				slowDown = true
				c.Interval += ClaimSlowDownStep
			}
		default:
			return nil
		}
		return tx.RecordAgentClaimPoll(ctx, c.RegistrationID, c.Status, c.Interval, now)
	})
	if errors.Is(err, core.ErrNoRows) {
		return nil, errBadClaimToken
	} else if err != nil {
		return nil, fmt.Errorf("poll agent claim: %w", err)
	}
	switch c.Status {
	case ClaimExpired:
		return nil, core.Errorf(core.KindInvalid, CodeExpiredToken, "the claim expired; register again with a new enrollment token")
	case ClaimDenied:
		return nil, core.Errorf(core.KindInvalid, CodeAccessDenied, "the owner declined")
	case ClaimRedeemed:
		return nil, core.Errorf(core.KindInvalid, CodeInvalidGrant, "the claim was redeemed already; exchange the identity assertion")
	case ClaimPending:
		if slowDown {
			return nil, core.Errorf(core.KindInvalid, CodeSlowDown, "polling too fast").With("interval", c.Interval)
		}
		return nil, core.Errorf(core.KindInvalid, CodeAuthorizationPending, "the owner has not approved yet").With("interval", c.Interval)
	}
	// Approved: hand out the token once.
	if err := s.d.Store.RedeemAgentClaim(ctx, c.RegistrationID); errors.Is(err, core.ErrConflict) {
		return nil, core.Errorf(core.KindInvalid, CodeInvalidGrant, "the claim was redeemed already")
	} else if err != nil {
		return nil, fmt.Errorf("redeem agent claim: %w", err)
	}
	reg, err := s.d.Store.GetAgentRegistration(ctx, c.RegistrationID)
	if err != nil {
		return nil, fmt.Errorf("redeem agent claim: %w", err)
	}
	if reg.Status != Active {
		return nil, core.Errorf(core.KindInvalid, CodeInvalidGrant, "the registration was revoked")
	}
	return s.issueAgentTokens(ctx, reg, reg.Scopes, resource, true)
}

// ExchangeAssertion is the jwt-bearer grant after the adapter verified
// the assertion's signature and claims: the registration must be active and
// jti its current assertion. An unclaimed (anonymous, pre-claim) assertion
// yields a token with no scope and no account access.
func (s *Service) ExchangeAssertion(ctx context.Context, registrationID, jti, resource string) (*Tokens, error) {
	resource, err := s.agentResource(resource)
	if err != nil {
		return nil, err
	}
	reg, err := s.activeAssertion(ctx, registrationID, jti)
	if err != nil {
		return nil, err
	}
	scopes := reg.Scopes
	if !reg.Claimed {
		scopes = []string{}
	}
	return s.issueAgentTokens(ctx, reg, scopes, resource, false)
}

// ErrAssertion is the refusal of an identity assertion that is not
// (or no longer) valid.
var ErrAssertion = core.Errorf(core.KindInvalid, CodeInvalidGrant, "the identity assertion is not valid, has expired or was superseded")

func (s *Service) activeAssertion(ctx context.Context, registrationID, jti string) (*Registration, error) {
	reg, err := s.d.Store.GetAgentRegistration(ctx, registrationID)
	if errors.Is(err, core.ErrNoRows) {
		return nil, ErrAssertion
	} else if err != nil {
		return nil, fmt.Errorf("agent assertion: %w", err)
	}
	if reg.Status != Active || subtle.ConstantTimeCompare([]byte(reg.AssertionJTI), []byte(jti)) != 1 {
		return nil, ErrAssertion
	}
	return reg, nil
}

// RevokeByAssertion revokes the registration of a verified, current
// identity assertion (the agent's own revoke call).
func (s *Service) RevokeByAssertion(ctx context.Context, registrationID, jti string) (*Registration, error) {
	reg, err := s.activeAssertion(ctx, registrationID, jti)
	if err != nil {
		return nil, err
	}
	if err := s.revoke(ctx, "", reg.ID, RevokedByAgent); err != nil && !isNotActive(err) {
		return nil, fmt.Errorf("revoke agent registration: %w", err)
	}
	return reg, nil
}

// RecordAssertion makes jti the registration's one current identity
// assertion; earlier assertions stop being exchangeable.
func (s *Service) RecordAssertion(ctx context.Context, registrationID, jti string) error {
	if err := s.d.Store.SetAgentAssertion(ctx, registrationID, jti, s.now()); err != nil {
		return fmt.Errorf("record agent assertion: %w", err)
	}
	return nil
}

func (s *Service) issueAgentTokens(ctx context.Context, reg *Registration, scopes []string, resource string, newAssertion bool) (*Tokens, error) {
	now := s.now()
	token := core.NewSecret(core.SecretAgentAccess)
	ownerID := reg.OwnerID
	if !reg.Claimed && reg.Type == TypeAnonymous && !newAssertion {
		ownerID = "" // a pre-claim anonymous token carries no account access
	}
	if err := s.d.Store.CreateAgentToken(ctx, &Token{TokenHash: core.HashSecret(token), RegistrationID: reg.ID, OwnerID: ownerID,
		Scopes: scopes, Resource: resource, CreatedAt: now, ExpiresAt: now.Add(AccessTokenTTL)}); err != nil {
		return nil, fmt.Errorf("create agent token: %w", err)
	}
	s.touch(ctx, reg, now)
	return &Tokens{Registration: reg, AccessToken: token, ExpiresIn: AccessTokenTTL, Scopes: NonNil(scopes), NewAssertion: newAssertion}, nil
}

// IsAccessToken tells an agent access token from other bearer tokens
// by its prefix, without a lookup.
func IsAccessToken(token string) bool { return strings.HasPrefix(token, core.SecretAgentAccess) }

// RevokeAccessToken revokes one agent access token; revoking an
// unknown or revoked token is not an error (RFC 7009).
func (s *Service) RevokeAccessToken(ctx context.Context, token string) error {
	if err := s.d.Store.DeleteAgentToken(ctx, core.HashSecret(token)); err != nil {
		return fmt.Errorf("revoke agent token: %w", err)
	}
	return nil
}

// TokenPrincipal turns an agent access token presented to audience
// into its Principal: the token's scopes within what the registration
// allows now, in the agent mode.
func (s *Service) TokenPrincipal(ctx context.Context, token, audience string) (core.Principal, error) {
	t, err := s.d.Store.GetAgentToken(ctx, core.HashSecret(token))
	if errors.Is(err, core.ErrNoRows) {
		return core.Principal{}, invalidToken("the access token is not valid, has expired or was revoked")
	} else if err != nil {
		return core.Principal{}, fmt.Errorf("look up agent token: %w", err)
	}
	now := s.now()
	if !now.Before(t.ExpiresAt) {
		return core.Principal{}, invalidToken("the access token has expired; exchange the identity assertion for a new one")
	}
	if audience == "" || t.Resource != audience {
		return core.Principal{}, invalidToken("the access token was issued for another resource")
	}
	reg, err := s.d.Store.GetAgentRegistration(ctx, t.RegistrationID)
	if err != nil || reg.Status != Active {
		return core.Principal{}, invalidToken("the agent registration was revoked")
	}
	var scopes []core.Scope
	for _, sc := range t.Scopes {
		if slices.Contains(reg.Scopes, sc) {
			scopes = append(scopes, core.Scope(sc))
		}
	}
	s.touch(ctx, reg, now)
	p := s.kernel.NewPrincipal(core.PrincipalAgent, t.OwnerID, scopes, reg.ID, reg.Name, audience, "")
	p.ClientName = reg.Name
	return p, nil
}

// touch records that the registration was used, at most once per
// core.TouchEvery: an exchange or a token's use is otherwise a read, and an
// unconditional write would be a second writer transaction on each.
// Best effort: a failed last-used write must not fail the request.
func (s *Service) touch(ctx context.Context, reg *Registration, now time.Time) {
	if reg.LastUsedAt != nil && now.Sub(*reg.LastUsedAt) <= core.TouchEvery {
		return
	}
	if err := s.d.Store.TouchAgentRegistration(ctx, reg.ID, now); err != nil {
		s.d.Logger.WarnContext(ctx, "touch agent registration", "registration_id", reg.ID, "err", err)
	}
}

func invalidToken(msg string) error {
	return core.Errorf(core.KindUnauthenticated, core.CodeInvalidToken, "%s", msg)
}

// ClaimRequest is what the owner decides on the claim page.
type ClaimRequest struct {
	Registration *Registration
	// Scopes are the requested ones: the owner may narrow them.
	Scopes    []string
	ExpiresAt time.Time
	TriesLeft int
}

// ownClaim finds the pending claim behind a claim link and checks that the
// signed-in owner is its enrolling, verified account.
func (s *Service) ownClaim(ctx context.Context, ownerID, attemptToken string) (*Claim, error) {
	if attemptToken == "" {
		return nil, core.Errorf(core.KindNotFound, CodeClaimLinkInvalid, "this claim link is not valid")
	}
	c, err := s.d.Store.GetAgentClaimByAttempt(ctx, core.HashSecret(attemptToken))
	if errors.Is(err, core.ErrNoRows) {
		return nil, core.Errorf(core.KindNotFound, CodeClaimLinkInvalid,
			"this claim link is no longer valid: the agent started a newer attempt, or the claim was decided already")
	} else if err != nil {
		return nil, fmt.Errorf("agent claim: %w", err)
	}
	if c.OwnerID != ownerID {
		return nil, core.Errorf(core.KindForbidden, CodeClaimWrongOwner,
			"this agent was enrolled by another account; sign in with the account that created the enrollment token")
	}
	if o, err := s.accounts.Owner(ctx, ownerID); err != nil {
		return nil, fmt.Errorf("agent claim: %w", err)
	} else if o.EmailVerifiedAt == nil {
		return nil, core.Errorf(core.KindForbidden, CodeClaimWrongOwner, "verify your email address before approving agents")
	}
	if err := s.codes.Open(claimState(c)); err != nil {
		return nil, err
	}
	return c, nil
}

// ClaimForOwner returns what the claim link asks the signed-in owner.
func (s *Service) ClaimForOwner(ctx context.Context, ownerID, attemptToken string) (*ClaimRequest, error) {
	c, err := s.ownClaim(ctx, ownerID, attemptToken)
	if err != nil {
		return nil, err
	}
	reg, err := s.d.Store.GetAgentRegistration(ctx, c.RegistrationID)
	if err != nil {
		return nil, fmt.Errorf("agent claim: %w", err)
	}
	return &ClaimRequest{Registration: reg, Scopes: c.Scopes, ExpiresAt: c.ExpiresAt, TriesLeft: s.codes.TriesLeft(claimState(c))}, nil
}

// DecideClaim records the owner's decision on a claim link: approval
// needs the six-digit code (ClaimMaxTries wrong codes end the attempt)
// and may narrow the requested scopes, never widen them (the
// code-confirmed approval of package approvals).
func (s *Service) DecideClaim(ctx context.Context, ownerID, attemptToken, userCode string, approve bool, scopes []string) error {
	c, err := s.ownClaim(ctx, ownerID, attemptToken)
	if err != nil {
		return err
	}
	_, err = s.codes.Decide(ctx, claimState(c), claimPort{s: s, c: c, attemptToken: attemptToken},
		approvals.CodeDecision[string]{Approve: approve, Code: userCode, Grant: scopes})
	return err
}

// DeclineClaim declines the owner's pending claim of a registration
// (the approval inbox's Decline); nothing happens if it is not pending or
// not the owner's.
func (s *Service) DeclineClaim(ctx context.Context, ownerID, registrationID string) error {
	reg, err := s.d.Store.GetAgentRegistration(ctx, registrationID)
	if errors.Is(err, core.ErrNoRows) || (err == nil && reg.OwnerID != ownerID) {
		return nil
	} else if err != nil {
		return fmt.Errorf("decline agent claim: %w", err)
	}
	if err := s.d.Store.DecideAgentClaim(ctx, registrationID, false, reg.Scopes, s.now()); err != nil && !errors.Is(err, core.ErrConflict) && !errors.Is(err, core.ErrNoRows) {
		return fmt.Errorf("decline agent claim: %w", err)
	}
	return nil
}

// PurgeExpiredTokens deletes agent access tokens that have expired.
func (s *Service) PurgeExpiredTokens(ctx context.Context) (int64, error) {
	return s.d.Store.DeleteExpiredAgentTokens(ctx, s.now())
}

func NonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
