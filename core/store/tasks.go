package store

import (
	"context"
	"fmt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/tasks"
)

var _ tasks.Queries = (*DB)(nil)

const agentTaskCols = `id, owner_id, mode, kind, skill, context_id, subject_id, created_at`

func (x q) CreateAgentTask(ctx context.Context, t *tasks.Task) error {
	err := x.insert(ctx, `INSERT INTO agent_tasks (`+agentTaskCols+`)
		VALUES (:id, :owner_id, :mode, :kind, :skill, :context_id, :subject_id, :created_at)
		ON CONFLICT DO NOTHING`, t)
	if err != nil {
		return fmt.Errorf("create agent task: %w", err)
	}
	return nil
}

// GetAgentTask reads one of the owner's tasks: another owner's task is
// ErrNoRows, exactly like an unknown id.
func (x q) GetAgentTask(ctx context.Context, ownerID, id string) (*tasks.Task, error) {
	var t tasks.Task
	if err := x.get(ctx, x.reader(), &t, "SELECT "+agentTaskCols+" FROM agent_tasks WHERE id = ? AND owner_id = ?", id, ownerID); err != nil {
		return nil, fmt.Errorf("get agent task: %w", err)
	}
	return &t, nil
}

const creditPurchaseCols = `id, owner_id, mode, task_id, pack_id, amount_micros, credit_micros, currency, status, cart_jws,
	expires_at, payment_mandate_id, payment_method, credential, approval_id, charge_id, failure_code, failure_reason,
	created_at, updated_at`

func (x q) CreateCreditPurchase(ctx context.Context, c *tasks.CreditPurchase) error {
	err := x.insert(ctx, `INSERT INTO credit_purchases (`+creditPurchaseCols+`)
		VALUES (:id, :owner_id, :mode, :task_id, :pack_id, :amount_micros, :credit_micros, :currency, :status, :cart_jws,
			:expires_at, :payment_mandate_id, :payment_method, :credential, :approval_id, :charge_id, :failure_code,
			:failure_reason, :created_at, :updated_at)
		ON CONFLICT DO NOTHING`, c)
	if err != nil {
		return fmt.Errorf("create credit purchase: %w", err)
	}
	return nil
}

func (x q) GetCreditPurchase(ctx context.Context, ownerID, id string) (*tasks.CreditPurchase, error) {
	var c tasks.CreditPurchase
	if err := x.get(ctx, x.reader(), &c, "SELECT "+creditPurchaseCols+" FROM credit_purchases WHERE id = ? AND owner_id = ?", id, ownerID); err != nil {
		return nil, fmt.Errorf("get credit purchase: %w", err)
	}
	return &c, nil
}

func (x q) GetCreditPurchaseByApproval(ctx context.Context, approvalID string) (*tasks.CreditPurchase, error) {
	var c tasks.CreditPurchase
	if err := x.get(ctx, x.reader(), &c, "SELECT "+creditPurchaseCols+" FROM credit_purchases WHERE approval_id = ?", approvalID); err != nil {
		return nil, fmt.Errorf("get credit purchase by approval: %w", err)
	}
	return &c, nil
}

// UpdateCreditPurchase writes c's mutable fields if the stored status is
// from: ErrConflict if it is not, ErrNoRows if there is no such purchase,
// ErrExists if c.PaymentMandateID is recorded on another purchase. The
// statement runs under a savepoint inside a transaction, so on PostgreSQL
// a replayed mandate leaves the caller's transaction usable.
func (x q) UpdateCreditPurchase(ctx context.Context, c *tasks.CreditPurchase, from tasks.PurchaseStatus) error {
	err := x.atomic(ctx, func(x q) error {
		n, err := x.exec(ctx, `UPDATE credit_purchases SET status = ?, payment_mandate_id = ?, payment_method = ?,
			credential = ?, approval_id = ?, charge_id = ?, failure_code = ?, failure_reason = ?, updated_at = ?
			WHERE id = ? AND status = ?`,
			c.Status, c.PaymentMandateID, c.PaymentMethod, c.Credential, c.ApprovalID, c.ChargeID, c.FailureCode,
			c.FailureReason, c.UpdatedAt, c.ID, from)
		if err == nil && n == 0 {
			err = x.missingOrConflict(ctx, "credit_purchases", "id = ?", c.ID)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("update credit purchase: %w", err)
	}
	return nil
}

// CancelDraft moves an open draft to canceled: ErrConflict if it is in
// another state, ErrNoRows if the owner has no such draft in mode. An open
// draft past its expiry is still open on the row; the service decides.
func (x q) CancelDraft(ctx context.Context, ownerID string, mode core.Mode, id string) error {
	n, err := x.exec(ctx, "UPDATE drafts SET status = ? WHERE id = ? AND owner_id = ? AND mode = ? AND status = ?",
		faxes.DraftCanceled, id, ownerID, mode, faxes.DraftOpen)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "drafts", "id = ? AND owner_id = ? AND mode = ?", id, ownerID, mode)
	}
	if err != nil {
		return fmt.Errorf("cancel draft: %w", err)
	}
	return nil
}
