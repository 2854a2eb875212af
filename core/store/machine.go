package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/machine"
)

var _ machine.Queries = (*DB)(nil)

const machineRequestCols = `request_id, body_digest, destination, country, pages, cover, options, price_micros, challenges,
	challenges_expire_at, generation, status, fax_id, response, receipt, created_at, updated_at`

const machineClaimCols = `challenge_id, request_id, method, mode, idempotency_key, amount, currency, credential, state,
	lease_until, document_id, fax_id, failure, created_at, updated_at`

func (x q) CreateMachineRequest(ctx context.Context, r *machine.Request) error {
	err := x.insert(ctx, `INSERT INTO machine_requests (`+machineRequestCols+`)
		VALUES (:request_id, :body_digest, :destination, :country, :pages, :cover, :options, :price_micros, :challenges,
			:challenges_expire_at, :generation, :status, :fax_id, :response, :receipt, :created_at, :updated_at)
		ON CONFLICT DO NOTHING`, r)
	if err != nil && !errors.Is(err, core.ErrExists) {
		return fmt.Errorf("create machine request: %w", err)
	}
	return err
}

func (x q) GetMachineRequest(ctx context.Context, id string) (*machine.Request, error) {
	var r machine.Request
	if err := x.get(ctx, x.reader(), &r, "SELECT "+machineRequestCols+" FROM machine_requests WHERE request_id = ?", id); err != nil {
		return nil, fmt.Errorf("get machine request: %w", err)
	}
	return &r, nil
}

func (x q) ReissueMachineChallenges(ctx context.Context, r *machine.Request) error {
	n, err := x.exec(ctx, `UPDATE machine_requests SET challenges = ?, challenges_expire_at = ?, generation = ?, updated_at = ?
		WHERE request_id = ? AND status = ? AND generation = ?`,
		r.Challenges, r.ChallengesExpireAt, r.Generation, r.UpdatedAt, r.RequestID, machine.RequestOpen, r.Generation-1)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "machine_requests", "request_id = ?", r.RequestID)
	}
	if err != nil {
		return fmt.Errorf("reissue machine challenges: %w", err)
	}
	return nil
}

func (x q) MarkMachineRequestPaid(ctx context.Context, id, faxID string, response []byte, receipt string, at time.Time) error {
	n, err := x.exec(ctx, `UPDATE machine_requests SET status = ?, fax_id = ?, response = ?, receipt = ?, updated_at = ?
		WHERE request_id = ? AND status = ?`, machine.RequestPaid, faxID, response, receipt, at, id, machine.RequestOpen)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "machine_requests", "request_id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("mark machine request paid: %w", err)
	}
	return nil
}

func (x q) InsertMachineClaim(ctx context.Context, c *machine.Claim) error {
	err := x.insert(ctx, `INSERT INTO machine_claims (`+machineClaimCols+`)
		VALUES (:challenge_id, :request_id, :method, :mode, :idempotency_key, :amount, :currency, :credential, :state,
			:lease_until, :document_id, :fax_id, :failure, :created_at, :updated_at)
		ON CONFLICT DO NOTHING`, c)
	if err != nil && !errors.Is(err, core.ErrExists) {
		return fmt.Errorf("insert machine claim: %w", err)
	}
	return err
}

func (x q) GetMachineClaim(ctx context.Context, id string) (*machine.Claim, error) {
	var c machine.Claim
	if err := x.get(ctx, x.reader(), &c, "SELECT "+machineClaimCols+" FROM machine_claims WHERE challenge_id = ?", id); err != nil {
		return nil, fmt.Errorf("get machine claim: %w", err)
	}
	return &c, nil
}

func (x q) TakeOverMachineClaim(ctx context.Context, c *machine.Claim, at time.Time) error {
	// A lapsed settling claim keeps its key, amount and credential: the
	// method may have charged under them, and only they replay it.
	n, err := x.exec(ctx, `UPDATE machine_claims SET lease_until = ?, updated_at = ?
		WHERE challenge_id = ? AND state = ? AND lease_until <= ?`,
		c.LeaseUntil, at, c.ChallengeID, machine.ClaimSettling, at)
	if err == nil && n == 0 {
		// A failed claim (nothing moved) is settled again under the new
		// credential.
		n, err = x.exec(ctx, `UPDATE machine_claims SET idempotency_key = ?, amount = ?, currency = ?, credential = ?, state = ?,
				lease_until = ?, document_id = ?, failure = '', updated_at = ?
			WHERE challenge_id = ? AND state = ? AND idempotency_key <> ?`,
			c.IdempotencyKey, c.Amount, c.Currency, c.Credential, machine.ClaimSettling, c.LeaseUntil, c.DocumentID, at,
			c.ChallengeID, machine.ClaimFailed, c.IdempotencyKey)
	}
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "machine_claims", "challenge_id = ?", c.ChallengeID)
	}
	if err != nil {
		return fmt.Errorf("take over machine claim: %w", err)
	}
	return nil
}

func (x q) RenewMachineClaim(ctx context.Context, id string, leaseWas, until time.Time) error {
	n, err := x.exec(ctx, `UPDATE machine_claims SET lease_until = ? WHERE challenge_id = ? AND state = ? AND lease_until = ?`,
		until, id, machine.ClaimSettling, leaseWas)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "machine_claims", "challenge_id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("renew machine claim: %w", err)
	}
	return nil
}

func (x q) ReleaseMachineClaim(ctx context.Context, id string, at time.Time) error {
	_, err := x.exec(ctx, `UPDATE machine_claims SET lease_until = ?, updated_at = ? WHERE challenge_id = ? AND state = ?`,
		at, at, id, machine.ClaimSettling)
	if err != nil {
		return fmt.Errorf("release machine claim: %w", err)
	}
	return nil
}

func (x q) FinishMachineClaim(ctx context.Context, id string, state machine.ClaimState, faxID *string, failure string, at time.Time) error {
	n, err := x.exec(ctx, `UPDATE machine_claims SET state = ?, fax_id = ?, failure = ?, credential = NULL, updated_at = ?
		WHERE challenge_id = ? AND state = ?`, state, faxID, failure, at, id, machine.ClaimSettling)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "machine_claims", "challenge_id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("finish machine claim: %w", err)
	}
	return nil
}

func (x q) StaleMachineClaims(ctx context.Context, before time.Time, n int) ([]machine.Claim, error) {
	var out []machine.Claim
	if err := x.sel(ctx, &out, "SELECT "+machineClaimCols+` FROM machine_claims
		WHERE state = ? AND lease_until <= ? ORDER BY lease_until, challenge_id`+limit(n), machine.ClaimSettling, before); err != nil {
		return nil, fmt.Errorf("stale machine claims: %w", err)
	}
	return out, nil
}

func (x q) GetChargeByFax(ctx context.Context, faxID string) (*credits.Charge, error) {
	var c credits.Charge
	if err := x.get(ctx, x.reader(), &c, "SELECT "+chargeCols+" FROM charges WHERE fax_id = ? ORDER BY created_at LIMIT 1", faxID); err != nil {
		return nil, fmt.Errorf("get charge of fax: %w", err)
	}
	return &c, nil
}

func (x q) SetChargeRefund(ctx context.Context, id, state string, due int64) error {
	n, err := x.exec(ctx, `UPDATE charges SET refund_state = ?, refund_due_units = ? WHERE id = ? AND refund_state = ''`, state, due, id)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "charges", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("set charge refund: %w", err)
	}
	return nil
}

func (x q) DueRefunds(ctx context.Context, now time.Time, n int) ([]credits.Charge, error) {
	var out []credits.Charge
	if err := x.sel(ctx, &out, "SELECT "+chargeCols+` FROM charges
		WHERE refund_state = ? AND (refund_lease_until IS NULL OR refund_lease_until <= ?) ORDER BY created_at, id`+limit(n),
		machine.RefundDue, now); err != nil {
		return nil, fmt.Errorf("due refunds: %w", err)
	}
	return out, nil
}

func (x q) LeaseRefund(ctx context.Context, id string, now, until time.Time) error {
	n, err := x.exec(ctx, `UPDATE charges SET refund_lease_until = ?
		WHERE id = ? AND refund_state = ? AND (refund_lease_until IS NULL OR refund_lease_until <= ?)`, until, id, machine.RefundDue, now)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "charges", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("lease refund: %w", err)
	}
	return nil
}

func (x q) FinishRefund(ctx context.Context, id, state, reference string, at time.Time) error {
	var (
		n   int64
		err error
	)
	if state == machine.RefundDone {
		n, err = x.exec(ctx, `UPDATE charges SET refund_state = ?, status = ?, refunded_at = ?, refund_reference = ?, refund_lease_until = NULL
			WHERE id = ? AND refund_state = ? AND status = ?`, state, credits.ChargeRefunded, at, reference, id, machine.RefundDue, credits.ChargeSucceeded)
	} else {
		n, err = x.exec(ctx, `UPDATE charges SET refund_state = ?, refund_lease_until = NULL WHERE id = ? AND refund_state = ?`,
			state, id, machine.RefundDue)
	}
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "charges", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("finish refund: %w", err)
	}
	return nil
}

func (x q) PurgeMachineRequests(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	err := x.atomic(ctx, func(x q) error {
		if _, err := x.exec(ctx, `DELETE FROM machine_claims WHERE state = ? AND request_id IN (
			SELECT request_id FROM machine_requests WHERE status = ? AND challenges_expire_at < ?)`,
			machine.ClaimFailed, machine.RequestOpen, before); err != nil {
			return err
		}
		n, err := x.exec(ctx, `DELETE FROM machine_requests WHERE status = ? AND challenges_expire_at < ?
			AND NOT EXISTS (SELECT 1 FROM machine_claims c WHERE c.request_id = machine_requests.request_id)`,
			machine.RequestOpen, before)
		total = n
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge machine requests: %w", err)
	}
	return total, nil
}

func (x q) PurgeMachineClaims(ctx context.Context, before time.Time) (int64, error) {
	n, err := x.exec(ctx, `DELETE FROM machine_claims WHERE state = ? AND updated_at < ?`, machine.ClaimFailed, before)
	if err != nil {
		return 0, fmt.Errorf("purge machine claims: %w", err)
	}
	return n, nil
}
