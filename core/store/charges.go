package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
)

var _ credits.ChargeStore = (*DB)(nil)

const chargeCols = `id, owner_id, mode, method, purpose, idempotency_key, amount_micros, currency, reference, status,
	fax_id, pack_id, subject, created_at, refunded_at, refund_reference,
	request_id, amount_units, refund_state, refund_due_units, refund_lease_until`

func (x q) CreateCharge(ctx context.Context, c *credits.Charge) error {
	err := x.insert(ctx, `INSERT INTO charges (`+chargeCols+`)
		VALUES (:id, :owner_id, :mode, :method, :purpose, :idempotency_key, :amount_micros, :currency, :reference, :status,
			:fax_id, :pack_id, :subject, :created_at, :refunded_at, :refund_reference,
			:request_id, :amount_units, :refund_state, :refund_due_units, :refund_lease_until)
		ON CONFLICT DO NOTHING`, c)
	if err != nil && !errors.Is(err, core.ErrExists) {
		return fmt.Errorf("create charge: %w", err)
	}
	return err
}

func (x q) GetCharge(ctx context.Context, id string) (*credits.Charge, error) {
	var c credits.Charge
	if err := x.get(ctx, x.reader(), &c, "SELECT "+chargeCols+" FROM charges WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get charge: %w", err)
	}
	return &c, nil
}

func (x q) GetChargeByKey(ctx context.Context, key string) (*credits.Charge, error) {
	var c credits.Charge
	if err := x.get(ctx, x.reader(), &c, "SELECT "+chargeCols+" FROM charges WHERE idempotency_key = ?", key); err != nil {
		return nil, fmt.Errorf("get charge: %w", err)
	}
	return &c, nil
}

func (x q) MarkChargeRefunded(ctx context.Context, id, reference string, at time.Time) error {
	n, err := x.exec(ctx, "UPDATE charges SET status = ?, refunded_at = ?, refund_reference = ? WHERE id = ? AND status = ?",
		credits.ChargeRefunded, at, reference, id, credits.ChargeSucceeded)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "charges", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("mark charge refunded: %w", err)
	}
	return nil
}
