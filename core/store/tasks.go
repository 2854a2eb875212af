package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

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

// agentTaskDraftSelect reads a task and, for a fax task, its draft (the
// draft of the task's owner and mode, as GetDraft reads it) in one query:
// GetTask reads both on every call. The draft's columns are NULL when the
// task is of another kind or its draft is gone.
var agentTaskDraftSelect = func() string {
	pre := func(p, cols string) string {
		cs := strings.Split(strings.Join(strings.Fields(cols), ""), ",")
		for i, c := range cs {
			cs[i] = p + c
		}
		return strings.Join(cs, ", ")
	}
	return "SELECT " + pre("t.", agentTaskCols) + ", " + pre("d.", draftCols) + `
	FROM agent_tasks t LEFT JOIN drafts d
		ON t.kind = '` + string(tasks.KindFax) + `' AND d.id = t.subject_id AND d.owner_id = t.owner_id AND d.mode = t.mode
	WHERE t.id = ? AND t.owner_id = ?`
}()

// GetAgentTaskDraft reads one of the owner's tasks as GetAgentTask does
// and, for a fax task, its draft (nil when the task is of another kind or
// its draft is gone). The row is scanned column by column: sqlx's
// reflection was a tenth of the time of these reads on GetTask's path.
func (x q) GetAgentTaskDraft(ctx context.Context, ownerID, id string) (*tasks.Task, *faxes.Draft, error) {
	var (
		t tasks.Task
		d faxes.Draft

		dID, dOwner, dMode, dDoc, dTo, dCountry, dCoverText, dStatus, dFrom, dKind, dSentID, dSentName sql.Null[string]
		dCover                                                                                         sql.Null[bool]
		dPages                                                                                         sql.Null[int]
		dPrice                                                                                         sql.Null[int64]
		dCreated, dExpires                                                                             sql.Null[time.Time]
	)
	// Column order: agentTaskCols, then draftCols.
	rctx, err := x.rowCtx(ctx, x.reader())
	if err != nil {
		return nil, nil, err
	}
	err = x.reader().QueryRowxContext(rctx, x.db.w.Rebind(agentTaskDraftSelect), id, ownerID).Scan(
		&t.ID, &t.OwnerID, &t.Mode, &t.Kind, &t.Skill, &t.ContextID, &t.SubjectID, &t.CreatedAt,
		&dID, &dOwner, &dMode, &dDoc, &dTo, &dCountry, &dCover, &dCoverText, &dPages, &dPrice, &dStatus,
		&d.FaxID, &dCreated, &dExpires, &dFrom, &d.Options, &dKind, &dSentID, &dSentName)
	if err != nil {
		return nil, nil, fmt.Errorf("get agent task with its draft: %w", dbErr(err))
	}
	if !dID.Valid {
		return &t, nil, nil
	}
	d.ID, d.OwnerID, d.Mode, d.DocumentID, d.To, d.Country = dID.V, dOwner.V, core.Mode(dMode.V), dDoc.V, dTo.V, dCountry.V
	d.Cover, d.CoverText, d.Pages, d.PriceMicros, d.Status = dCover.V, dCoverText.V, dPages.V, dPrice.V, faxes.DraftStatus(dStatus.V)
	d.CreatedAt, d.ExpiresAt, d.From = dCreated.V, dExpires.V, dFrom.V
	d.SentBy = faxes.SentBy{Kind: core.PrincipalKind(dKind.V), ID: dSentID.V, Name: dSentName.V}
	return &t, &d, nil
}
