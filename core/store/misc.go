package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/checkout"
)

const idempotencyCols = "scope, key, request_hash, response_code, response, created_at"

func (x q) InsertIdempotency(ctx context.Context, r *core.IdempotencyRecord) error {
	err := x.insert(ctx, `INSERT INTO idempotency_records (`+idempotencyCols+`)
		VALUES (:scope, :key, :request_hash, :response_code, :response, :created_at) ON CONFLICT DO NOTHING`, r)
	if err != nil {
		return fmt.Errorf("insert idempotency record: %w", err)
	}
	return nil
}

func (x q) GetIdempotency(ctx context.Context, scope, key string) (*core.IdempotencyRecord, error) {
	var r core.IdempotencyRecord
	if err := x.get(ctx, x.reader(), &r, "SELECT "+idempotencyCols+" FROM idempotency_records WHERE scope = ? AND key = ?", scope, key); err != nil {
		return nil, fmt.Errorf("get idempotency record: %w", err)
	}
	return &r, nil
}

// approvalRow reads the JSON columns as bytes: SQLite returns TEXT as a
// string, which database/sql will not store in a json.RawMessage.
type approvalRow struct {
	approvals.Approval
	RawDetails  []byte `db:"raw_details"`
	RawDecision []byte `db:"raw_decision"`
}

func (r *approvalRow) approval() approvals.Approval {
	a := r.Approval
	a.Details, a.Decision = r.RawDetails, r.RawDecision
	return a
}

const approvalSelect = `SELECT id, owner_id, mode, kind, requester, summary, details AS raw_details, binding_hash, requires_uv,
	status, decision AS raw_decision, created_at, expires_at, decided_at FROM approvals`

func (x q) CreateApproval(ctx context.Context, a *approvals.Approval) error {
	err := x.insert(ctx, `INSERT INTO approvals (id, owner_id, mode, kind, requester, summary, details, binding_hash, requires_uv,
			status, decision, created_at, expires_at, decided_at)
		VALUES (:id, :owner_id, :mode, :kind, :requester, :summary, :details, :binding_hash, :requires_uv, :status, :decision,
			:created_at, :expires_at, :decided_at)
		ON CONFLICT DO NOTHING`, a)
	if err != nil {
		return fmt.Errorf("create approval: %w", err)
	}
	return nil
}

func (x q) GetApproval(ctx context.Context, ownerID, id string) (*approvals.Approval, error) {
	var r approvalRow
	if err := x.get(ctx, x.reader(), &r, approvalSelect+" WHERE id = ? AND owner_id = ?", id, ownerID); err != nil {
		return nil, fmt.Errorf("get approval: %w", err)
	}
	a := r.approval()
	return &a, nil
}

func (x q) FindApproval(ctx context.Context, ownerID string, kind approvals.Kind, bindingHash string) (*approvals.Approval, error) {
	var r approvalRow
	if err := x.get(ctx, x.reader(), &r, approvalSelect+` WHERE owner_id = ? AND kind = ? AND binding_hash = ?
		ORDER BY created_at DESC, id DESC LIMIT 1`, ownerID, kind, bindingHash); err != nil {
		return nil, fmt.Errorf("find approval: %w", err)
	}
	a := r.approval()
	return &a, nil
}

// ListApprovals lists the owner's approvals in status (any if empty), newest
// first; limit <= 0 means all.
func (x q) ListApprovals(ctx context.Context, ownerID string, status approvals.Status, n int) ([]approvals.Approval, error) {
	where, args := " WHERE owner_id = ?", []any{ownerID}
	if status != "" {
		where += " AND status = ?"
		args = append(args, status)
	}
	var rows []approvalRow
	if err := x.sel(ctx, &rows, approvalSelect+where+" ORDER BY created_at DESC, id DESC"+limit(n), args...); err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	out := make([]approvals.Approval, len(rows))
	for i := range rows {
		out[i] = rows[i].approval()
	}
	return out, nil
}

func (x q) DecideApproval(ctx context.Context, ownerID, id string, status approvals.Status, decision []byte, at time.Time) error {
	var d any
	if len(decision) > 0 {
		d = string(decision)
	}
	n, err := x.exec(ctx, `UPDATE approvals SET status = ?, decision = ?, decided_at = ?
		WHERE id = ? AND owner_id = ? AND status = ? AND expires_at > ?`,
		status, d, at, id, ownerID, approvals.Pending, at)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "approvals", "id = ? AND owner_id = ?", id, ownerID)
	}
	if err != nil {
		return fmt.Errorf("decide approval: %w", err)
	}
	return nil
}

const checkoutCols = `id, owner_id, mode, kind, pack_id, draft_id, amount_micros, credit_micros, status, external_id,
	created_at, expires_at, paid_at, payment_ref, refunded_cents, reversed_micros, refunded_at, number_id`

func (x q) CreateCheckout(ctx context.Context, c *checkout.Checkout) error {
	err := x.insert(ctx, `INSERT INTO checkouts (`+checkoutCols+`)
		VALUES (:id, :owner_id, :mode, :kind, :pack_id, :draft_id, :amount_micros, :credit_micros, :status, :external_id,
			:created_at, :expires_at, :paid_at, :payment_ref, :refunded_cents, :reversed_micros, :refunded_at, :number_id)
		ON CONFLICT DO NOTHING`, c)
	if err != nil {
		return fmt.Errorf("create checkout: %w", err)
	}
	return nil
}

func (x q) GetCheckout(ctx context.Context, id string) (*checkout.Checkout, error) {
	var c checkout.Checkout
	if err := x.get(ctx, x.reader(), &c, "SELECT "+checkoutCols+" FROM checkouts WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get checkout: %w", err)
	}
	return &c, nil
}

func (x q) MarkCheckoutPaid(ctx context.Context, id string, at time.Time) error {
	n, err := x.exec(ctx, "UPDATE checkouts SET status = ?, paid_at = ? WHERE id = ? AND status = ?", checkout.Paid, at, id, checkout.Open)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "checkouts", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("mark checkout paid: %w", err)
	}
	return nil
}

func (x q) SettleCheckout(ctx context.Context, id, paymentRef string, at time.Time) error {
	n, err := x.exec(ctx, "UPDATE checkouts SET status = ?, paid_at = ?, payment_ref = ? WHERE id = ? AND status IN (?, ?, ?)",
		checkout.Paid, at, paymentRef, id, checkout.Open, checkout.Expired, checkout.Failed)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "checkouts", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("settle checkout: %w", err)
	}
	return nil
}

func (x q) EndCheckout(ctx context.Context, id string, status checkout.Status) error {
	if status != checkout.Expired && status != checkout.Failed {
		return fmt.Errorf("end checkout: a checkout ends expired or failed, not %q", status)
	}
	n, err := x.exec(ctx, "UPDATE checkouts SET status = ? WHERE id = ? AND status = ?", status, id, checkout.Open)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "checkouts", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("end checkout: %w", err)
	}
	return nil
}

func (x q) GetCheckoutByPaymentRef(ctx context.Context, paymentRef string) (*checkout.Checkout, error) {
	if paymentRef == "" {
		return nil, fmt.Errorf("get checkout by payment: %w", core.ErrNoRows)
	}
	var c checkout.Checkout
	if err := x.get(ctx, x.reader(), &c, "SELECT "+checkoutCols+" FROM checkouts WHERE payment_ref = ?", paymentRef); err != nil {
		return nil, fmt.Errorf("get checkout by payment: %w", err)
	}
	return &c, nil
}

func (x q) RecordCheckoutRefund(ctx context.Context, id string, refundedCents, reversedMicros int64, at time.Time) error {
	n, err := x.exec(ctx, `UPDATE checkouts SET refunded_cents = ?, reversed_micros = reversed_micros + ?, refunded_at = ?
		WHERE id = ? AND status = ? AND refunded_cents < ?`, refundedCents, reversedMicros, at, id, checkout.Paid, refundedCents)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "checkouts", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("record checkout refund: %w", err)
	}
	return nil
}

// AllowRate is GCRA with the theoretical arrival time (tat) in one row per
// key. An event is admitted when, after adding it, the tat is at most
// burst intervals ahead of now:
//
//	new_tat = max(tat, now) + interval; admit if new_tat - burst*interval <= now
//
// The insert-or-conditional-update is one statement, so concurrent callers
// on any replica are serialized by the row and exactly burst of a burst of
// callers get through.
func (x q) AllowRate(ctx context.Context, key string, now time.Time, interval time.Duration, burst int) (bool, time.Duration, error) {
	iv := max(interval.Microseconds(), 1)
	b := int64(max(burst, 1))
	t := now.UnixMicro()
	greatest := "max"
	if x.db.dialect == DialectPostgres {
		greatest = "GREATEST"
	}
	var admitted bool
	var cur int64
	err := x.write(ctx, func(x q) error {
		// RETURNING gives a row only when the event is admitted. Scanned
		// directly: the send path charges this once per fax, on SQLite in
		// the single writer, where sqlx's reflection was a third of it.
		var tat int64
		err := x.writer().QueryRowxContext(ctx, x.db.w.Rebind(`INSERT INTO rate_limits (key, tat) VALUES (?, CAST(? AS BIGINT))
			ON CONFLICT (key) DO UPDATE SET tat = `+greatest+`(rate_limits.tat, CAST(? AS BIGINT)) + CAST(? AS BIGINT)
			WHERE `+greatest+`(rate_limits.tat, CAST(? AS BIGINT)) + CAST(? AS BIGINT) - CAST(? AS BIGINT) <= CAST(? AS BIGINT)
			RETURNING tat`), key, t+iv, t, iv, t, iv, b*iv, t).Scan(&tat)
		if admitted = err == nil; admitted || !errors.Is(err, sql.ErrNoRows) {
			return dbErr(err)
		}
		// Refused: the row was left as it is. The wait is until the tat
		// is no more than burst-1 intervals ahead.
		return x.get(ctx, x.writer(), &cur, "SELECT tat FROM rate_limits WHERE key = ?", key)
	})
	if err != nil {
		return false, 0, fmt.Errorf("rate limit: %w", err)
	}
	if admitted {
		return true, 0, nil
	}
	wait := cur - t - (b-1)*iv
	return false, time.Duration(max(wait, 1)) * time.Microsecond, nil
}
