package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
)

var _ agents.Queries = (*DB)(nil)

// forUpdate locks the selected rows on PostgreSQL; SQLite transactions
// take the write lock at BEGIN already.
func (x q) forUpdate() string {
	if x.db.dialect == DialectPostgres {
		return " FOR UPDATE"
	}
	return ""
}

func fields(s string) []string {
	f := strings.Fields(s)
	if f == nil {
		f = []string{}
	}
	return f
}

type agentEnrollmentRow struct {
	agents.Enrollment
	RawScopes string `db:"raw_scopes"`
}

const agentEnrollmentSelect = `SELECT id, owner_id, name, scopes AS raw_scopes, token_hash, created_at, expires_at,
	consumed_at, revoked_at, registration_id FROM agent_enrollments`

func (x q) CreateAgentEnrollment(ctx context.Context, e *agents.Enrollment, max int) error {
	err := x.atomic(ctx, func(x q) error {
		// Serialise the owner's issuances: the count and the insert must
		// not interleave with another replica's.
		var id string
		if err := x.get(ctx, x.writer(), &id, "SELECT id FROM owners WHERE id = ?"+x.forUpdate(), e.OwnerID); err != nil {
			return err
		}
		var n int
		if err := x.get(ctx, x.writer(), &n, `SELECT COUNT(*) FROM agent_enrollments WHERE owner_id = ?
			AND consumed_at IS NULL AND revoked_at IS NULL AND expires_at > ?`, e.OwnerID, e.CreatedAt); err != nil {
			return err
		}
		if n >= max {
			return core.ErrConflict
		}
		n64, err := x.exec(ctx, `INSERT INTO agent_enrollments (id, owner_id, name, scopes, token_hash, created_at, expires_at,
			consumed_at, revoked_at, registration_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			e.ID, e.OwnerID, e.Name, strings.Join(e.Scopes, " "), e.TokenHash, e.CreatedAt, e.ExpiresAt, e.ConsumedAt, e.RevokedAt, e.RegistrationID)
		if err == nil && n64 == 0 {
			err = core.ErrExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create agent enrollment: %w", err)
	}
	return nil
}

func (x q) GetAgentEnrollmentByHash(ctx context.Context, hash string) (*agents.Enrollment, error) {
	var r agentEnrollmentRow
	if err := x.get(ctx, x.reader(), &r, agentEnrollmentSelect+" WHERE token_hash = ?", hash); err != nil {
		return nil, fmt.Errorf("get agent enrollment: %w", err)
	}
	e := r.Enrollment
	e.Scopes = fields(r.RawScopes)
	return &e, nil
}

func (x q) ListAgentEnrollments(ctx context.Context, ownerID string, now time.Time) ([]agents.Enrollment, error) {
	var rows []agentEnrollmentRow
	if err := x.sel(ctx, &rows, agentEnrollmentSelect+` WHERE owner_id = ? AND consumed_at IS NULL AND revoked_at IS NULL
		AND expires_at > ? ORDER BY created_at DESC, id DESC`, ownerID, now); err != nil {
		return nil, fmt.Errorf("list agent enrollments: %w", err)
	}
	out := make([]agents.Enrollment, len(rows))
	for i, r := range rows {
		out[i] = r.Enrollment
		out[i].Scopes = fields(r.RawScopes)
	}
	return out, nil
}

func (x q) RevokeAgentEnrollment(ctx context.Context, ownerID, id string, at time.Time) error {
	n, err := x.exec(ctx, `UPDATE agent_enrollments SET revoked_at = ? WHERE id = ? AND owner_id = ?
		AND consumed_at IS NULL AND revoked_at IS NULL`, at, id, ownerID)
	if err == nil && n == 0 {
		err = core.ErrNoRows
	}
	if err != nil {
		return fmt.Errorf("revoke agent enrollment: %w", err)
	}
	return nil
}

type agentRegistrationRow struct {
	agents.Registration
	RawScopes string `db:"raw_scopes"`
}

const agentRegistrationSelect = `SELECT id, owner_id, type, name, scopes AS raw_scopes, status, claimed, created_at,
	last_used_at, revoked_at, assertion_jti, assertion_issued_at FROM agent_registrations`

func (x q) RegisterAgent(ctx context.Context, enrollmentID string, r *agents.Registration, c *agents.Claim) error {
	err := x.atomic(ctx, func(x q) error {
		n, err := x.exec(ctx, `UPDATE agent_enrollments SET consumed_at = ?, registration_id = ? WHERE id = ?
			AND consumed_at IS NULL AND revoked_at IS NULL AND expires_at > ?`, r.CreatedAt, r.ID, enrollmentID, r.CreatedAt)
		if err != nil {
			return err
		}
		if n == 0 {
			return core.ErrConflict
		}
		if _, err := x.exec(ctx, `INSERT INTO agent_registrations (id, owner_id, type, name, scopes, status, claimed,
			created_at, last_used_at, revoked_at, assertion_jti, assertion_issued_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.OwnerID, r.Type, r.Name, strings.Join(r.Scopes, " "), r.Status, r.Claimed, r.CreatedAt, r.LastUsedAt,
			r.RevokedAt, r.AssertionJTI, r.AssertionIssuedAt); err != nil {
			return err
		}
		_, err = x.exec(ctx, `INSERT INTO agent_claims (registration_id, owner_id, token_hash, user_code_hash, attempt_hash,
			approval_id, scopes, status, created_at, expires_at, interval_seconds, last_poll_at, tries)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.RegistrationID, c.OwnerID, c.TokenHash, c.UserCodeHash, c.AttemptHash, c.ApprovalID, strings.Join(c.Scopes, " "),
			c.Status, c.CreatedAt, c.ExpiresAt, c.Interval, c.LastPollAt, c.Tries)
		return err
	})
	if err != nil {
		return fmt.Errorf("register agent: %w", err)
	}
	return nil
}

func (x q) GetAgentRegistration(ctx context.Context, id string) (*agents.Registration, error) {
	var r agentRegistrationRow
	if err := x.get(ctx, x.reader(), &r, agentRegistrationSelect+" WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get agent registration: %w", err)
	}
	g := r.Registration
	g.Scopes = fields(r.RawScopes)
	return &g, nil
}

func (x q) ListAgentRegistrations(ctx context.Context, ownerID string) ([]agents.Registration, error) {
	var rows []agentRegistrationRow
	if err := x.sel(ctx, &rows, agentRegistrationSelect+" WHERE owner_id = ? ORDER BY created_at DESC, id DESC", ownerID); err != nil {
		return nil, fmt.Errorf("list agent registrations: %w", err)
	}
	out := make([]agents.Registration, len(rows))
	for i, r := range rows {
		out[i] = r.Registration
		out[i].Scopes = fields(r.RawScopes)
	}
	return out, nil
}

func (x q) RevokeAgentRegistration(ctx context.Context, ownerID, id string, at time.Time) error {
	err := x.atomic(ctx, func(x q) error {
		where, args := "id = ? AND status = ?", []any{id, agents.Active}
		if ownerID != "" {
			where, args = where+" AND owner_id = ?", append(args, ownerID)
		}
		n, err := x.exec(ctx, "UPDATE agent_registrations SET status = ?, revoked_at = ? WHERE "+where,
			append([]any{agents.Revoked, at}, args...)...)
		if err != nil {
			return err
		}
		if n == 0 {
			return core.ErrNoRows
		}
		if _, err := x.exec(ctx, "DELETE FROM agent_tokens WHERE registration_id = ?", id); err != nil {
			return err
		}
		_, err = x.exec(ctx, "UPDATE agent_claims SET status = ? WHERE registration_id = ? AND status IN (?, ?)",
			agents.ClaimDenied, id, agents.ClaimPending, agents.ClaimApproved)
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke agent registration: %w", err)
	}
	return nil
}

func (x q) SetAgentAssertion(ctx context.Context, id, jti string, at time.Time) error {
	n, err := x.exec(ctx, "UPDATE agent_registrations SET assertion_jti = ?, assertion_issued_at = ? WHERE id = ? AND status = ?",
		jti, at, id, agents.Active)
	if err == nil && n == 0 {
		err = core.ErrNoRows
	}
	if err != nil {
		return fmt.Errorf("set agent assertion: %w", err)
	}
	return nil
}

func (x q) TouchAgentRegistration(ctx context.Context, id string, at time.Time) error {
	if _, err := x.exec(ctx, "UPDATE agent_registrations SET last_used_at = ? WHERE id = ?", at, id); err != nil {
		return fmt.Errorf("touch agent registration: %w", err)
	}
	return nil
}

type agentClaimRow struct {
	agents.Claim
	RawScopes string `db:"raw_scopes"`
}

const agentClaimSelect = `SELECT registration_id, owner_id, token_hash, user_code_hash, attempt_hash, approval_id,
	scopes AS raw_scopes, status, created_at, expires_at, interval_seconds, last_poll_at, tries FROM agent_claims`

func (x q) getClaim(ctx context.Context, lock bool, where string, args ...any) (*agents.Claim, error) {
	var r agentClaimRow
	query, on := agentClaimSelect+" WHERE "+where, x.reader()
	if lock {
		query, on = query+x.forUpdate(), x.writer()
	}
	if err := x.get(ctx, on, &r, query, args...); err != nil {
		return nil, err
	}
	c := r.Claim
	c.Scopes = fields(r.RawScopes)
	return &c, nil
}

func (x q) GetAgentClaimByToken(ctx context.Context, tokenHash string) (*agents.Claim, error) {
	c, err := x.getClaim(ctx, false, "token_hash = ?", tokenHash)
	if err != nil {
		return nil, fmt.Errorf("get agent claim: %w", err)
	}
	return c, nil
}

func (x q) GetAgentClaimByAttempt(ctx context.Context, attemptHash string) (*agents.Claim, error) {
	if attemptHash == "" {
		return nil, fmt.Errorf("get agent claim: %w", core.ErrNoRows)
	}
	c, err := x.getClaim(ctx, false, "attempt_hash = ?", attemptHash)
	if err != nil {
		return nil, fmt.Errorf("get agent claim: %w", err)
	}
	return c, nil
}

func (x q) StartAgentClaimAttempt(ctx context.Context, registrationID, attemptHash, codeHash, approvalID string) error {
	n, err := x.exec(ctx, `UPDATE agent_claims SET attempt_hash = ?, user_code_hash = ?, approval_id = ?, tries = 0
		WHERE registration_id = ? AND status = ?`, attemptHash, codeHash, approvalID, registrationID, agents.ClaimPending)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "agent_claims", "registration_id = ?", registrationID)
	}
	if err != nil {
		return fmt.Errorf("start agent claim attempt: %w", err)
	}
	return nil
}

func (x q) AddAgentClaimTry(ctx context.Context, attemptHash string) (int, error) {
	var tries int
	err := x.atomic(ctx, func(x q) error {
		n, err := x.exec(ctx, "UPDATE agent_claims SET tries = tries + 1 WHERE attempt_hash = ? AND attempt_hash <> ''", attemptHash)
		if err != nil {
			return err
		}
		if n == 0 {
			return core.ErrNoRows
		}
		return x.get(ctx, x.writer(), &tries, "SELECT tries FROM agent_claims WHERE attempt_hash = ?", attemptHash)
	})
	if err != nil {
		return 0, fmt.Errorf("count agent claim try: %w", err)
	}
	return tries, nil
}

func (x q) DecideAgentClaim(ctx context.Context, registrationID string, approve bool, scopes []string, at time.Time) error {
	err := x.atomic(ctx, func(x q) error {
		status := agents.ClaimDenied
		if approve {
			status = agents.ClaimApproved
		}
		n, err := x.exec(ctx, `UPDATE agent_claims SET status = ?, scopes = ?, attempt_hash = '' WHERE registration_id = ?
			AND status = ? AND expires_at > ?`, status, strings.Join(scopes, " "), registrationID, agents.ClaimPending, at)
		if err != nil {
			return err
		}
		if n == 0 {
			return x.missingOrConflict(ctx, "agent_claims", "registration_id = ?", registrationID)
		}
		if !approve {
			return nil
		}
		n, err = x.exec(ctx, "UPDATE agent_registrations SET scopes = ? WHERE id = ? AND status = ?",
			strings.Join(scopes, " "), registrationID, agents.Active)
		if err == nil && n == 0 {
			err = core.ErrConflict
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("decide agent claim: %w", err)
	}
	return nil
}

func (x q) LockAgentClaim(ctx context.Context, tokenHash string) (*agents.Claim, error) {
	c, err := x.getClaim(ctx, true, "token_hash = ?", tokenHash)
	if err != nil {
		return nil, fmt.Errorf("lock agent claim: %w", err)
	}
	return c, nil
}

func (x q) RecordAgentClaimPoll(ctx context.Context, registrationID, status string, interval int, at time.Time) error {
	n, err := x.exec(ctx, `UPDATE agent_claims SET status = ?, interval_seconds = ?, last_poll_at = ?,
		attempt_hash = CASE WHEN ? = ? THEN attempt_hash ELSE '' END WHERE registration_id = ?`,
		status, interval, at, status, agents.ClaimPending, registrationID)
	if err == nil && n == 0 {
		err = core.ErrNoRows
	}
	if err != nil {
		return fmt.Errorf("record agent claim poll: %w", err)
	}
	return nil
}

func (x q) RedeemAgentClaim(ctx context.Context, registrationID string) error {
	err := x.atomic(ctx, func(x q) error {
		n, err := x.exec(ctx, "UPDATE agent_claims SET status = ? WHERE registration_id = ? AND status = ?",
			agents.ClaimRedeemed, registrationID, agents.ClaimApproved)
		if err != nil {
			return err
		}
		if n == 0 {
			return x.missingOrConflict(ctx, "agent_claims", "registration_id = ?", registrationID)
		}
		// Pre-claim tokens stop working.
		if _, err := x.exec(ctx, "DELETE FROM agent_tokens WHERE registration_id = ?", registrationID); err != nil {
			return err
		}
		_, err = x.exec(ctx, "UPDATE agent_registrations SET claimed = TRUE WHERE id = ?", registrationID)
		return err
	})
	if err != nil {
		return fmt.Errorf("redeem agent claim: %w", err)
	}
	return nil
}

func (x q) CreateAgentToken(ctx context.Context, t *agents.Token) error {
	n, err := x.exec(ctx, `INSERT INTO agent_tokens (token_hash, registration_id, owner_id, scopes, resource, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		t.TokenHash, t.RegistrationID, t.OwnerID, strings.Join(t.Scopes, " "), t.Resource, t.CreatedAt, t.ExpiresAt)
	if err == nil && n == 0 {
		err = core.ErrExists
	}
	if err != nil {
		return fmt.Errorf("create agent token: %w", err)
	}
	return nil
}

type agentTokenRow struct {
	agents.Token
	RawScopes string `db:"raw_scopes"`
}

func (x q) GetAgentToken(ctx context.Context, hash string) (*agents.Token, error) {
	var r agentTokenRow
	if err := x.get(ctx, x.reader(), &r, `SELECT token_hash, registration_id, owner_id, scopes AS raw_scopes, resource,
		created_at, expires_at FROM agent_tokens WHERE token_hash = ?`, hash); err != nil {
		return nil, fmt.Errorf("get agent token: %w", err)
	}
	t := r.Token
	t.Scopes = fields(r.RawScopes)
	return &t, nil
}

func (x q) DeleteAgentToken(ctx context.Context, hash string) error {
	if _, err := x.exec(ctx, "DELETE FROM agent_tokens WHERE token_hash = ?", hash); err != nil {
		return fmt.Errorf("delete agent token: %w", err)
	}
	return nil
}

func (x q) DeleteExpiredAgentTokens(ctx context.Context, t time.Time) (int64, error) {
	n, err := x.exec(ctx, "DELETE FROM agent_tokens WHERE expires_at < ?", t)
	if err != nil {
		return 0, fmt.Errorf("delete expired agent tokens: %w", err)
	}
	return n, nil
}
