package agents_test

import (
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// registerService enrolls and registers a service_auth agent of owner A.
func registerService(t *testing.T, e *testenv.Env, scopes []string) *agents.Registered {
	t.Helper()
	en, err := e.Svc.Agents.CreateEnrollment(ctx, e.OwnerA.ID, "Build bot", scopes)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeService, EnrollmentToken: en.EnrollmentToken, LoginHint: e.OwnerA.Email})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func attemptToken(t *testing.T, a *agents.ClaimAttempt) string {
	t.Helper()
	_, tok, ok := strings.Cut(a.VerificationURI, core.LinkClaimPage.PathPrefix())
	if !ok || tok == "" || strings.Contains(a.VerificationURI, a.UserCode) {
		t.Fatalf("verification_uri %q", a.VerificationURI)
	}
	return tok
}

func TestAgentEnrollmentRules(t *testing.T) {
	e, clk := testenv.Clocked(t)
	owner := e.OwnerA.ID
	// Scopes default to read-only, are validated and normalised.
	en, err := e.Svc.Agents.CreateEnrollment(ctx, owner, " Bot ", nil)
	if err != nil || en.Name != "Bot" || strings.Join(en.Scopes, " ") != "credits:read fax:read" || !strings.HasPrefix(en.EnrollmentToken, core.SecretEnrollment) {
		t.Fatalf("default enrollment = %+v, %v", en, err)
	}
	if !en.ExpiresAt.Equal(clk.Now().Add(agents.EnrollmentTTL)) {
		t.Fatalf("expires %v", en.ExpiresAt)
	}
	_, err = e.Svc.Agents.CreateEnrollment(ctx, owner, "Bot", []string{"fax:send", "fax:send", "fax:read"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		scopes []string
		code   string
	}{{"", nil, core.CodeInvalidRequest}, {strings.Repeat("x", 101), nil, core.CodeInvalidRequest}, {"Bot", []string{"admin"}, agents.CodeInvalidScope}} {
		_, err := e.Svc.Agents.CreateEnrollment(ctx, owner, c.name, c.scopes)
		testenv.WantCode(t, err, c.code)
	}
	// Five live unused at most; a revoked one frees a slot.
	for range agents.MaxLiveEnrollments - 2 {
		if _, err := e.Svc.Agents.CreateEnrollment(ctx, owner, "Bot", nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.Svc.Agents.CreateEnrollment(ctx, owner, "Bot", nil)
	testenv.WantCode(t, err, agents.CodeTooManyEnrollments)
	if err := e.Svc.Agents.RevokeEnrollment(ctx, owner, en.ID); err != nil {
		t.Fatal(err)
	}
	testenv.WantCode(t, e.Svc.Agents.RevokeEnrollment(ctx, owner, en.ID), core.CodeNotFound)
	if _, err := e.Svc.Agents.CreateEnrollment(ctx, owner, "Bot", nil); err != nil {
		t.Fatal(err)
	}
	// Expired tokens free their slots too.
	clk.Advance(agents.EnrollmentTTL + time.Second)
	if _, err := e.Svc.Agents.CreateEnrollment(ctx, owner, "Bot", nil); err != nil {
		t.Fatal(err)
	}
	// Issuance is rate limited per owner: a burst of ten at one instant
	// (each revoked at once, so the live-token limit is not what stops it).
	var n int
	for {
		en, err := e.Svc.Agents.CreateEnrollment(ctx, e.OwnerB.ID, "Bot", nil)
		if err != nil {
			testenv.WantCode(t, err, core.CodeRateLimited)
			if core.AsError(err).RetryAfterSeconds < 1 {
				t.Fatalf("no Retry-After: %v", err)
			}
			break
		}
		if err := e.Svc.Agents.RevokeEnrollment(ctx, e.OwnerB.ID, en.ID); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 10 {
		t.Fatalf("%d enrollments before the rate limit, want 10", n)
	}
}

func TestAgentRegistrationRules(t *testing.T) {
	e, clk := testenv.Clocked(t)
	_, err := e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeService})
	testenv.WantCode(t, err, agents.CodeEnrollmentRequired)
	_, err = e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeService, EnrollmentToken: "fxe_unknown"})
	testenv.WantCode(t, err, agents.CodeInvalidEnrollment)

	en, err := e.Svc.Agents.CreateEnrollment(ctx, e.OwnerA.ID, "Bot", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Failures do not consume the token.
	_, err = e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: "oidc", EnrollmentToken: en.EnrollmentToken})
	testenv.WantCode(t, err, core.CodeInvalidRequest)
	_, err = e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeService, EnrollmentToken: en.EnrollmentToken, LoginHint: e.OwnerB.Email})
	testenv.WantCode(t, err, agents.CodeLoginHintMismatch)
	reg, err := e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeService, EnrollmentToken: en.EnrollmentToken, LoginHint: strings.ToUpper(e.OwnerA.Email)})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Attempt == nil || reg.Attempt.Interval != agents.ClaimInterval || len(reg.Attempt.UserCode) != 6 || reg.Registration.Name != "Bot" {
		t.Fatalf("registration = %+v", reg)
	}
	// Consumed.
	_, err = e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeService, EnrollmentToken: en.EnrollmentToken, LoginHint: e.OwnerA.Email})
	testenv.WantCode(t, err, agents.CodeInvalidEnrollment)
	// Expired.
	en2, _ := e.Svc.Agents.CreateEnrollment(ctx, e.OwnerA.ID, "Bot", nil)
	clk.Advance(agents.EnrollmentTTL)
	_, err = e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeAnonymous, EnrollmentToken: en2.EnrollmentToken})
	testenv.WantCode(t, err, agents.CodeInvalidEnrollment)
	// Anonymous: no claim attempt, no account access before the claim.
	en3, _ := e.Svc.Agents.CreateEnrollment(ctx, e.OwnerA.ID, "Anon", []string{"fax:read"})
	anon, err := e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeAnonymous, EnrollmentToken: en3.EnrollmentToken})
	if err != nil || anon.Attempt != nil {
		t.Fatalf("anonymous = %+v, %v", anon, err)
	}
	if err := e.Svc.Agents.RecordAssertion(ctx, anon.Registration.ID, "jti_1"); err != nil {
		t.Fatal(err)
	}
	tok, err := e.Svc.Agents.ExchangeAssertion(ctx, anon.Registration.ID, "jti_1", "")
	if err != nil || len(tok.Scopes) != 0 {
		t.Fatalf("pre-claim exchange = %+v, %v", tok, err)
	}
	p, err := e.Svc.Agents.TokenPrincipal(ctx, tok.AccessToken, e.Svc.Kernel.ResourceMCP())
	if err != nil || p.OwnerID != "" || len(p.Scopes) != 0 {
		t.Fatalf("pre-claim principal = %+v, %v", p, err)
	}
	testenv.WantCode(t, core.Authorize(p, core.OpGetCredits), core.CodeUnauthenticated)
	_, err = e.Svc.Agents.ExchangeAssertion(ctx, anon.Registration.ID, "jti_old", "")
	testenv.WantCode(t, err, agents.CodeInvalidGrant)
}

func TestAgentClaimStates(t *testing.T) {
	e, clk := testenv.Clocked(t)
	reg := registerService(t, e, []string{"fax:read", "credits:read", "fax:draft"})
	ct := reg.ClaimToken

	// pending → authorization_pending, and slow_down (+5 s) when too fast.
	_, err := e.Svc.Agents.PollClaim(ctx, ct, "")
	testenv.WantCode(t, err, agents.CodeAuthorizationPending)
	if core.AsError(err).Fields["interval"] != 5 {
		t.Fatalf("interval: %v", core.AsError(err).Fields)
	}
	clk.Advance(2 * time.Second)
	_, err = e.Svc.Agents.PollClaim(ctx, ct, "")
	testenv.WantCode(t, err, agents.CodeSlowDown)
	if core.AsError(err).Fields["interval"] != 10 {
		t.Fatalf("slow_down interval: %v", core.AsError(err).Fields)
	}
	clk.Advance(10 * time.Second)
	_, err = e.Svc.Agents.PollClaim(ctx, ct, "")
	testenv.WantCode(t, err, agents.CodeAuthorizationPending)
	_, err = e.Svc.Agents.PollClaim(ctx, ct, "https://elsewhere.example/mcp")
	testenv.WantCode(t, err, agents.CodeInvalidTarget)
	_, err = e.Svc.Agents.PollClaim(ctx, "fxc_unknown", "")
	testenv.WantCode(t, err, agents.CodeInvalidGrant)

	// A new attempt invalidates the old link; the email must match.
	_, err = e.Svc.Agents.StartClaim(ctx, ct, e.OwnerB.Email)
	testenv.WantCode(t, err, agents.CodeEmailMismatch)
	old := attemptToken(t, reg.Attempt)
	att, err := e.Svc.Agents.StartClaim(ctx, ct, e.OwnerA.Email)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Agents.ClaimForOwner(ctx, e.OwnerA.ID, old)
	testenv.WantCode(t, err, agents.CodeClaimLinkInvalid)
	// New attempts are bounded per registration: five at once, then one
	// every 30 s.
	for range 4 {
		if att, err = e.Svc.Agents.StartClaim(ctx, ct, e.OwnerA.Email); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.Svc.Agents.StartClaim(ctx, ct, e.OwnerA.Email)
	testenv.WantCode(t, err, core.CodeRateLimited)
	link := attemptToken(t, att)

	// Only the enrolling owner; wrong codes are counted.
	_, err = e.Svc.Agents.ClaimForOwner(ctx, e.OwnerB.ID, link)
	testenv.WantCode(t, err, agents.CodeClaimWrongOwner)
	testenv.WantCode(t, e.Svc.Agents.DecideClaim(ctx, e.OwnerA.ID, link, "000000x", true, nil), agents.CodeClaimWrongCode)
	req, err := e.Svc.Agents.ClaimForOwner(ctx, e.OwnerA.ID, link)
	if err != nil || req.TriesLeft != agents.ClaimMaxTries-1 || len(req.Scopes) != 3 {
		t.Fatalf("claim request = %+v, %v", req, err)
	}
	// Narrowing only.
	testenv.WantCode(t, e.Svc.Agents.DecideClaim(ctx, e.OwnerA.ID, link, att.UserCode, true, []string{"fax:send"}), agents.CodeClaimScopeWiden)
	if err := e.Svc.Agents.DecideClaim(ctx, e.OwnerA.ID, link, att.UserCode, true, []string{"fax:read"}); err != nil {
		t.Fatal(err)
	}
	testenv.WantCode(t, e.Svc.Agents.DecideClaim(ctx, e.OwnerA.ID, link, att.UserCode, true, nil), agents.CodeClaimLinkInvalid)

	// approved → the next poll hands out the tokens once, with a new
	// assertion; then redeemed.
	clk.Advance(time.Minute)
	tok, err := e.Svc.Agents.PollClaim(ctx, ct, "")
	if err != nil || !tok.NewAssertion || strings.Join(tok.Scopes, " ") != "fax:read" || tok.ExpiresIn != time.Hour {
		t.Fatalf("approved poll = %+v, %v", tok, err)
	}
	_, err = e.Svc.Agents.PollClaim(ctx, ct, "")
	testenv.WantCode(t, err, agents.CodeInvalidGrant)
	p, err := e.Svc.Agents.TokenPrincipal(ctx, tok.AccessToken, e.Svc.Kernel.ResourceMCP())
	if err != nil || p.OwnerID != e.OwnerA.ID || p.Kind != core.PrincipalAgent || len(p.Scopes) != 1 {
		t.Fatalf("principal = %+v, %v", p, err)
	}
	_, err = e.Svc.Agents.TokenPrincipal(ctx, tok.AccessToken, e.Svc.Kernel.ResourceA2A())
	testenv.WantCode(t, err, core.CodeInvalidToken)
	// A token for the A2A endpoint is for it alone.
	if err := e.Svc.Agents.RecordAssertion(ctx, tok.Registration.ID, "jti_a2a"); err != nil {
		t.Fatal(err)
	}
	a2a, err := e.Svc.Agents.ExchangeAssertion(ctx, tok.Registration.ID, "jti_a2a", e.Svc.Kernel.ResourceA2A())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Agents.TokenPrincipal(ctx, a2a.AccessToken, e.Svc.Kernel.ResourceA2A()); err != nil {
		t.Fatalf("a2a token at /a2a: %v", err)
	}
	_, err = e.Svc.Agents.TokenPrincipal(ctx, a2a.AccessToken, e.Svc.Kernel.ResourceMCP())
	testenv.WantCode(t, err, core.CodeInvalidToken)
	// The token lives one hour.
	clk.Advance(time.Hour)
	_, err = e.Svc.Agents.TokenPrincipal(ctx, tok.AccessToken, e.Svc.Kernel.ResourceMCP())
	testenv.WantCode(t, err, core.CodeInvalidToken)
}

func TestAgentClaimDeclineAndExpiry(t *testing.T) {
	e, clk := testenv.Clocked(t)
	declined := registerService(t, e, nil)
	if err := e.Svc.Agents.DecideClaim(ctx, e.OwnerA.ID, attemptToken(t, declined.Attempt), "", false, nil); err != nil {
		t.Fatal(err)
	}
	_, err := e.Svc.Agents.PollClaim(ctx, declined.ClaimToken, "")
	testenv.WantCode(t, err, agents.CodeAccessDenied)
	_, err = e.Svc.Agents.StartClaim(ctx, declined.ClaimToken, e.OwnerA.Email)
	testenv.WantCode(t, err, agents.CodeAccessDenied)

	expiring := registerService(t, e, nil)
	clk.Advance(agents.ClaimTTL)
	testenv.WantCode(t, e.Svc.Agents.DecideClaim(ctx, e.OwnerA.ID, attemptToken(t, expiring.Attempt), expiring.Attempt.UserCode, true, nil), agents.CodeClaimExpired)
	_, err = e.Svc.Agents.PollClaim(ctx, expiring.ClaimToken, "")
	testenv.WantCode(t, err, agents.CodeExpiredToken)
	_, err = e.Svc.Agents.PollClaim(ctx, expiring.ClaimToken, "")
	testenv.WantCode(t, err, agents.CodeExpiredToken)
}

func TestAgentClaimInInbox(t *testing.T) {
	e, _ := testenv.Clocked(t)
	reg := registerService(t, e, nil)
	pend, err := e.Svc.Approvals.ListPending(ctx, e.OwnerA.ID)
	if err != nil || len(pend) != 1 || pend[0].Kind != approvals.KindAgentClaim {
		t.Fatalf("inbox = %+v, %v", pend, err)
	}
	a := pend[0]
	// Approving the inbox item alone is refused: the code is at the link.
	_, err = e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approvals.Decision{Approve: true, BindingHash: a.BindingHash})
	testenv.WantCode(t, err, core.CodeInvalidRequest)
	// A new attempt retires the old inbox item.
	att, err := e.Svc.Agents.StartClaim(ctx, reg.ClaimToken, e.OwnerA.Email)
	if err != nil {
		t.Fatal(err)
	}
	if old, _ := e.Svc.Approvals.Get(ctx, e.OwnerA.ID, a.ID); old.Status != approvals.Expired {
		t.Fatalf("superseded inbox item %s", old.Status)
	}
	pend, err = e.Svc.Approvals.ListPending(ctx, e.OwnerA.ID)
	if err != nil || len(pend) != 1 {
		t.Fatalf("inbox = %+v, %v", pend, err)
	}
	// Declining it declines the claim.
	if _, err := e.Svc.Approvals.Decide(ctx, e.OwnerA.ID, pend[0].ID, approvals.Decision{BindingHash: pend[0].BindingHash}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Agents.PollClaim(ctx, reg.ClaimToken, "")
	testenv.WantCode(t, err, agents.CodeAccessDenied)
	testenv.WantCode(t, e.Svc.Agents.DecideClaim(ctx, e.OwnerA.ID, attemptToken(t, att), att.UserCode, true, nil), agents.CodeClaimLinkInvalid)
}

func TestAgentRevocation(t *testing.T) {
	e, _ := testenv.Clocked(t)
	reg := registerService(t, e, []string{"credits:read"})
	if err := e.Svc.Agents.DecideClaim(ctx, e.OwnerA.ID, attemptToken(t, reg.Attempt), reg.Attempt.UserCode, true, nil); err != nil {
		t.Fatal(err)
	}
	tok, err := e.Svc.Agents.PollClaim(ctx, reg.ClaimToken, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Agents.RecordAssertion(ctx, reg.Registration.ID, "jti_a"); err != nil {
		t.Fatal(err)
	}
	// Revoking one token leaves the assertion exchangeable (idempotently).
	for range 2 {
		if err := e.Svc.Agents.RevokeAccessToken(ctx, tok.AccessToken); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.Svc.Agents.TokenPrincipal(ctx, tok.AccessToken, e.Svc.Kernel.ResourceMCP())
	testenv.WantCode(t, err, core.CodeInvalidToken)
	tok2, err := e.Svc.Agents.ExchangeAssertion(ctx, reg.Registration.ID, "jti_a", "")
	if err != nil || strings.Join(tok2.Scopes, " ") != "credits:read" || tok2.NewAssertion {
		t.Fatalf("re-exchange = %+v, %v", tok2, err)
	}
	// Revoking the registration stops tokens and exchanges.
	if _, err := e.Svc.Agents.RevokeByAssertion(ctx, reg.Registration.ID, "jti_a"); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Agents.TokenPrincipal(ctx, tok2.AccessToken, e.Svc.Kernel.ResourceMCP())
	testenv.WantCode(t, err, core.CodeInvalidToken)
	_, err = e.Svc.Agents.ExchangeAssertion(ctx, reg.Registration.ID, "jti_a", "")
	testenv.WantCode(t, err, agents.CodeInvalidGrant)
	testenv.WantCode(t, e.Svc.Agents.RevokeRegistration(ctx, e.OwnerA.ID, reg.Registration.ID), core.CodeNotFound)
}

// TestPrincipalModes: every kind of principal gets its mode where it is
// built, from one setting (Config.AgentMode) for the agent kinds.
func TestPrincipalModes(t *testing.T) {
	for _, setting := range []core.Mode{core.ModeLive, core.ModeTest} {
		t.Run(string(setting), func(t *testing.T) {
			e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.AgentMode = setting }))
			// API keys keep their own mode whatever the setting.
			for key, want := range map[string]core.Mode{e.KeyATest: core.ModeTest, e.KeyALive: core.ModeLive} {
				if p := e.Principal(t, key); p.Mode != want || p.Kind != core.PrincipalAPIKey {
					t.Errorf("API key principal %+v, want mode %s", p, want)
				}
			}
			// Owner sessions act in the mode the page shows.
			if p := core.OwnerPrincipal(e.OwnerA.ID, core.ModeTest); p.Mode != core.ModeTest {
				t.Errorf("owner principal %+v", p)
			}
			// Chat apps (OAuth grants) and registered agents act in the
			// setting.
			if p := e.Svc.Kernel.GrantPrincipal(core.GrantAccess{OwnerID: e.OwnerA.ID, GrantID: "grt_1", Scopes: []core.Scope{core.ScopeFaxRead}}); p.Mode != setting || p.Kind != core.PrincipalOAuthGrant {
				t.Errorf("grant principal %+v, want mode %s", p, setting)
			}
			reg := registerService(t, e, nil)
			if err := e.Svc.Agents.DecideClaim(ctx, e.OwnerA.ID, attemptToken(t, reg.Attempt), reg.Attempt.UserCode, true, nil); err != nil {
				t.Fatal(err)
			}
			tok, err := e.Svc.Agents.PollClaim(ctx, reg.ClaimToken, "")
			if err != nil {
				t.Fatal(err)
			}
			if p, err := e.Svc.Agents.TokenPrincipal(ctx, tok.AccessToken, e.Svc.Kernel.ResourceMCP()); err != nil || p.Mode != setting {
				t.Errorf("agent principal %+v (%v), want mode %s", p, err, setting)
			}
		})
	}
}

// An exchange and a token's use record last_used_at at most once per
// core.TouchEvery: each is otherwise a read (and the exchange one insert),
// and an unconditional write would be a second writer transaction on each.
func TestAgentLastUsedBounded(t *testing.T) {
	e, clk := testenv.Clocked(t)
	en, _ := e.Svc.Agents.CreateEnrollment(ctx, e.OwnerA.ID, "Anon", []string{"fax:read"})
	anon, err := e.Svc.Agents.Register(ctx, agents.RegisterRequest{Type: agents.TypeAnonymous, EnrollmentToken: en.EnrollmentToken})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Agents.RecordAssertion(ctx, anon.Registration.ID, "jti_1"); err != nil {
		t.Fatal(err)
	}
	lastUsed := func() time.Time {
		t.Helper()
		r, err := e.Store.GetAgentRegistration(ctx, anon.Registration.ID)
		if err != nil || r.LastUsedAt == nil {
			t.Fatalf("registration = %+v, %v", r, err)
		}
		return *r.LastUsedAt
	}
	exchange := func() string {
		t.Helper()
		tok, err := e.Svc.Agents.ExchangeAssertion(ctx, anon.Registration.ID, "jti_1", "")
		if err != nil {
			t.Fatal(err)
		}
		return tok.AccessToken
	}
	exchange()
	first := lastUsed()
	for _, step := range []time.Duration{20 * time.Second, 20 * time.Second, 20 * time.Second} {
		clk.Advance(step)
		tok := exchange()
		if _, err := e.Svc.Agents.TokenPrincipal(ctx, tok, e.Svc.Kernel.ResourceMCP()); err != nil {
			t.Fatal(err)
		}
		if got := lastUsed(); !got.Equal(first) {
			t.Fatalf("%s after the first use: last_used_at moved to %s (first %s)", clk.Now().Sub(first), got, first)
		}
	}
	clk.Advance(time.Second) // past core.TouchEvery since the last write
	exchange()
	if got := lastUsed(); !got.Equal(clk.Now()) {
		t.Fatalf("past core.TouchEvery: last_used_at = %s, want %s", got, clk.Now())
	}
}
