package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/services"
)

func agentStore(t *testing.T, s services.Store) agents.Queries { return s }

func newEnrollment(ownerID string, sec int) *agents.Enrollment {
	return &agents.Enrollment{
		ID: core.NewID(core.PrefixAgentEnrollment), OwnerID: ownerID, Name: "Build bot", Scopes: []string{"fax:read", "credits:read"},
		TokenHash: core.NewID("h_"), CreatedAt: at(sec), ExpiresAt: at(sec).Add(agents.EnrollmentTTL),
	}
}

func registerAgent(t *testing.T, s agents.Queries, e *agents.Enrollment, sec int) (*agents.Registration, *agents.Claim) {
	t.Helper()
	r := &agents.Registration{ID: core.NewID(core.PrefixAgentRegistration), OwnerID: e.OwnerID, Type: agents.TypeService, Name: e.Name,
		Scopes: e.Scopes, Status: agents.Active, CreatedAt: at(sec)}
	c := &agents.Claim{RegistrationID: r.ID, OwnerID: e.OwnerID, TokenHash: core.NewID("ct_"), UserCodeHash: "code1",
		AttemptHash: core.NewID("att_"), Scopes: e.Scopes, Status: agents.ClaimPending, CreatedAt: at(sec),
		ExpiresAt: at(sec).Add(agents.ClaimTTL), Interval: agents.ClaimInterval}
	must(t, s.RegisterAgent(t.Context(), e.ID, r, c))
	return r, c
}

// testAgentEnrollments: issuance limit, listing, revocation, claim-once
// consumption, and expiry.
func testAgentEnrollments(t *testing.T, st services.Store) {
	ctx, s := t.Context(), agentStore(t, st)
	o := newOwner(t, st)
	var es []*agents.Enrollment
	for i := range agents.MaxLiveEnrollments {
		e := newEnrollment(o.ID, i)
		must(t, s.CreateAgentEnrollment(ctx, e, agents.MaxLiveEnrollments))
		es = append(es, e)
	}
	wantErr(t, "sixth live token", s.CreateAgentEnrollment(ctx, newEnrollment(o.ID, 10), agents.MaxLiveEnrollments), core.ErrConflict)
	got, err := s.GetAgentEnrollmentByHash(ctx, es[0].TokenHash)
	must(t, err)
	wantEqual(t, "GetAgentEnrollmentByHash", got, es[0])
	list, err := s.ListAgentEnrollments(ctx, o.ID, at(10))
	must(t, err)
	if len(list) != agents.MaxLiveEnrollments {
		t.Fatalf("live tokens = %d", len(list))
	}
	// Revoking one frees a slot; a revoked token cannot register.
	must(t, s.RevokeAgentEnrollment(ctx, o.ID, es[0].ID, at(11)))
	wantErr(t, "revoke twice", s.RevokeAgentEnrollment(ctx, o.ID, es[0].ID, at(11)), core.ErrNoRows)
	must(t, s.CreateAgentEnrollment(ctx, newEnrollment(o.ID, 12), agents.MaxLiveEnrollments))
	r := &agents.Registration{ID: core.NewID(core.PrefixAgentRegistration), OwnerID: o.ID, Type: agents.TypeAnonymous, Name: "x", Status: agents.Active, CreatedAt: at(13)}
	c := &agents.Claim{RegistrationID: r.ID, OwnerID: o.ID, TokenHash: "t1", Status: agents.ClaimPending, CreatedAt: at(13), ExpiresAt: at(600), Interval: 5}
	wantErr(t, "register with revoked token", s.RegisterAgent(ctx, es[0].ID, r, c), core.ErrConflict)
	// Consumed once; a second registration with it fails and leaves nothing.
	r1, _ := registerAgent(t, s, es[1], 13)
	r2 := *r1
	r2.ID = core.NewID(core.PrefixAgentRegistration)
	c2 := &agents.Claim{RegistrationID: r2.ID, OwnerID: o.ID, TokenHash: "t2", Status: agents.ClaimPending, CreatedAt: at(13), ExpiresAt: at(600), Interval: 5}
	wantErr(t, "reuse consumed token", s.RegisterAgent(ctx, es[1].ID, &r2, c2), core.ErrConflict)
	_, err = s.GetAgentRegistration(ctx, r2.ID)
	wantErr(t, "failed registration left a row", err, core.ErrNoRows)
	got, err = s.GetAgentEnrollmentByHash(ctx, es[1].TokenHash)
	must(t, err)
	if got.ConsumedAt == nil || got.RegistrationID != r1.ID {
		t.Fatalf("consumed token = %+v", got)
	}
	// Expired tokens neither count nor register.
	wantErr(t, "register with expired token", s.RegisterAgent(ctx, es[2].ID,
		&agents.Registration{ID: "agr_late", OwnerID: o.ID, Type: agents.TypeAnonymous, Name: "x", Status: agents.Active, CreatedAt: at(2000)},
		&agents.Claim{RegistrationID: "agr_late", OwnerID: o.ID, TokenHash: "t3", Status: agents.ClaimPending, CreatedAt: at(2000), ExpiresAt: at(2600), Interval: 5}), core.ErrConflict)
	list, err = s.ListAgentEnrollments(ctx, o.ID, at(2000))
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("expired tokens listed: %d", len(list))
	}
}

// testAgentEnrollmentsConcurrent: many concurrent issuances never exceed
// the live limit.
func testAgentEnrollmentsConcurrent(t *testing.T, st services.Store) {
	ctx, s := t.Context(), agentStore(t, st)
	o := newOwner(t, st)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range concurrency {
		wg.Go(func() {
			err := s.CreateAgentEnrollment(ctx, newEnrollment(o.ID, i%3), agents.MaxLiveEnrollments)
			if err != nil && !errors.Is(err, core.ErrConflict) {
				t.Error(err)
			}
			if err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ok != agents.MaxLiveEnrollments {
		t.Fatalf("%d tokens issued, want %d", ok, agents.MaxLiveEnrollments)
	}
}

// testAgentClaims: polling, slow_down growth, attempts, decisions, expiry,
// redemption, tokens and registration revocation.
func testAgentClaims(t *testing.T, st services.Store) {
	ctx, s := t.Context(), agentStore(t, st)
	o := newOwner(t, st)
	e := newEnrollment(o.ID, 0)
	must(t, s.CreateAgentEnrollment(ctx, e, agents.MaxLiveEnrollments))
	r, c := registerAgent(t, s, e, 1)
	got, err := s.GetAgentRegistration(ctx, r.ID)
	must(t, err)
	wantEqual(t, "GetAgentRegistration", got, r)

	locked, err := s.LockAgentClaim(ctx, c.TokenHash)
	must(t, err)
	wantEqual(t, "LockAgentClaim", locked.RegistrationID, r.ID)
	must(t, s.RecordAgentClaimPoll(ctx, r.ID, agents.ClaimPending, 10, at(14)))
	cl, err := s.GetAgentClaimByToken(ctx, c.TokenHash)
	must(t, err)
	if cl.Interval != 10 || cl.LastPollAt == nil || !cl.LastPollAt.Equal(at(14)) || cl.AttemptHash != c.AttemptHash {
		t.Fatalf("stored claim = %+v", cl)
	}
	wantErr(t, "record a poll of a missing claim", s.RecordAgentClaimPoll(ctx, "agr_missing", agents.ClaimPending, 5, at(15)), core.ErrNoRows)

	// A new attempt replaces the old link and resets the tries.
	n, err := s.AddAgentClaimTry(ctx, c.AttemptHash)
	must(t, err)
	wantEqual(t, "tries", n, 1)
	must(t, s.StartAgentClaimAttempt(ctx, r.ID, "att2", "code2", "apr_1"))
	_, err = s.GetAgentClaimByAttempt(ctx, c.AttemptHash)
	wantErr(t, "old link", err, core.ErrNoRows)
	cl, err = s.GetAgentClaimByAttempt(ctx, "att2")
	must(t, err)
	if cl.Tries != 0 || cl.UserCodeHash != "code2" || cl.ApprovalID != "apr_1" {
		t.Fatalf("new attempt = %+v", cl)
	}

	// A pre-claim token is deleted on redemption.
	pre := &agents.Token{TokenHash: "pre", RegistrationID: r.ID, OwnerID: o.ID, Scopes: []string{}, Resource: "https://x/mcp", CreatedAt: at(20), ExpiresAt: at(3620)}
	must(t, s.CreateAgentToken(ctx, pre))
	gt, err := s.GetAgentToken(ctx, "pre")
	must(t, err)
	wantEqual(t, "GetAgentToken", gt, pre)

	wantErr(t, "redeem pending", s.RedeemAgentClaim(ctx, r.ID), core.ErrConflict)
	must(t, s.DecideAgentClaim(ctx, r.ID, true, []string{"fax:read"}, at(30)))
	wantErr(t, "decide twice", s.DecideAgentClaim(ctx, r.ID, false, nil, at(31)), core.ErrConflict)
	cl, err = s.GetAgentClaimByToken(ctx, c.TokenHash)
	must(t, err)
	if cl.Status != agents.ClaimApproved || len(cl.Scopes) != 1 || cl.AttemptHash != "" {
		t.Fatalf("approved claim = %+v", cl)
	}
	must(t, s.RedeemAgentClaim(ctx, r.ID))
	wantErr(t, "redeem twice", s.RedeemAgentClaim(ctx, r.ID), core.ErrConflict)
	_, err = s.GetAgentToken(ctx, "pre")
	wantErr(t, "pre-claim token", err, core.ErrNoRows)
	got, err = s.GetAgentRegistration(ctx, r.ID)
	must(t, err)
	if !got.Claimed || len(got.Scopes) != 1 || got.Scopes[0] != "fax:read" {
		t.Fatalf("claimed registration = %+v", got)
	}

	must(t, s.SetAgentAssertion(ctx, r.ID, "jti1", at(41)))
	must(t, s.TouchAgentRegistration(ctx, r.ID, at(42)))
	must(t, s.CreateAgentToken(ctx, &agents.Token{TokenHash: "post", RegistrationID: r.ID, OwnerID: o.ID, Scopes: []string{"fax:read"}, Resource: "r", CreatedAt: at(42), ExpiresAt: at(3642)}))
	must(t, s.DeleteAgentToken(ctx, "post"))
	must(t, s.DeleteAgentToken(ctx, "post"))
	must(t, s.CreateAgentToken(ctx, &agents.Token{TokenHash: "post2", RegistrationID: r.ID, OwnerID: o.ID, Scopes: []string{"fax:read"}, Resource: "r", CreatedAt: at(42), ExpiresAt: at(3642)}))
	purged, err := s.DeleteExpiredAgentTokens(ctx, at(3643))
	must(t, err)
	wantEqual(t, "expired tokens deleted", purged, int64(1))
	must(t, s.CreateAgentToken(ctx, &agents.Token{TokenHash: "post2", RegistrationID: r.ID, OwnerID: o.ID, Scopes: []string{"fax:read"}, Resource: "r", CreatedAt: at(42), ExpiresAt: at(3642)}))
	regs, err := s.ListAgentRegistrations(ctx, o.ID)
	must(t, err)
	if len(regs) != 1 || regs[0].AssertionJTI != "jti1" || regs[0].LastUsedAt == nil {
		t.Fatalf("registrations = %+v", regs)
	}
	wantErr(t, "revoke other owner's", s.RevokeAgentRegistration(ctx, "own_other", r.ID, at(50)), core.ErrNoRows)
	must(t, s.RevokeAgentRegistration(ctx, o.ID, r.ID, at(50)))
	wantErr(t, "revoke twice", s.RevokeAgentRegistration(ctx, "", r.ID, at(51)), core.ErrNoRows)
	_, err = s.GetAgentToken(ctx, "post2")
	wantErr(t, "token after registration revoke", err, core.ErrNoRows)
	wantErr(t, "assertion after revoke", s.SetAgentAssertion(ctx, r.ID, "jti2", at(52)), core.ErrNoRows)

	// Decline and expiry.
	e2 := newEnrollment(o.ID, 100)
	must(t, s.CreateAgentEnrollment(ctx, e2, agents.MaxLiveEnrollments))
	r2, c2 := registerAgent(t, s, e2, 100)
	must(t, s.DecideAgentClaim(ctx, r2.ID, false, nil, at(110)))
	cl, err = s.GetAgentClaimByToken(ctx, c2.TokenHash)
	must(t, err)
	wantEqual(t, "declined", cl.Status, agents.ClaimDenied)
	e3 := newEnrollment(o.ID, 200)
	must(t, s.CreateAgentEnrollment(ctx, e3, agents.MaxLiveEnrollments))
	r3, c3 := registerAgent(t, s, e3, 200)
	wantErr(t, "approve expired", s.DecideAgentClaim(ctx, r3.ID, true, nil, at(200).Add(agents.ClaimTTL)), core.ErrConflict)
	must(t, s.RecordAgentClaimPoll(ctx, r3.ID, agents.ClaimExpired, 5, at(200).Add(agents.ClaimTTL+time.Second)))
	cl, err = s.GetAgentClaimByToken(ctx, c3.TokenHash)
	must(t, err)
	if cl.Status != agents.ClaimExpired || cl.AttemptHash != "" {
		t.Fatalf("expired claim = %+v", cl)
	}
	_, err = s.LockAgentClaim(ctx, "nope")
	wantErr(t, "unknown claim", err, core.ErrNoRows)
}

// testAgentPollConcurrent: LockAgentClaim inside transactions serialises
// concurrent read-modify-write polls of one claim: no update is lost.
func testAgentPollConcurrent(t *testing.T, st services.Store) {
	ctx, s := t.Context(), agentStore(t, st)
	o := newOwner(t, st)
	e := newEnrollment(o.ID, 0)
	must(t, s.CreateAgentEnrollment(ctx, e, agents.MaxLiveEnrollments))
	_, c := registerAgent(t, s, e, 0)
	var wg sync.WaitGroup
	const n = 10
	for range n {
		wg.Go(func() {
			err := inTx(ctx, st, func(tx services.Tx) error {
				cl, err := tx.LockAgentClaim(ctx, c.TokenHash)
				if err != nil {
					return err
				}
				return tx.RecordAgentClaimPoll(ctx, cl.RegistrationID, cl.Status, cl.Interval+agents.ClaimSlowDownStep, at(1))
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	cl, err := s.GetAgentClaimByToken(ctx, c.TokenHash)
	must(t, err)
	if want := agents.ClaimInterval + n*agents.ClaimSlowDownStep; cl.Interval != want {
		t.Fatalf("interval = %d, want %d", cl.Interval, want)
	}
}

// RunAgentTests runs the agent-registration conformance tests on one store.
func RunAgentTests(t *testing.T, st services.Store) {
	t.Run("Enrollments", func(t *testing.T) { testAgentEnrollments(t, st) })
	t.Run("EnrollmentsConcurrent", func(t *testing.T) { testAgentEnrollmentsConcurrent(t, st) })
	t.Run("Claims", func(t *testing.T) { testAgentClaims(t, st) })
	t.Run("PollConcurrent", func(t *testing.T) { testAgentPollConcurrent(t, st) })
}
