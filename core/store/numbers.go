package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
)

const numberCols = `id, owner_id, mode, e164, country, region, locality, status, provider, provider_ref, order_ref,
	monthly_micros, reserved_until, paid_through, failure_code, failure_reason, created_at, updated_at, activated_at, released_at`

// heldStatuses are the statuses the numbers_held index covers.
var heldStatuses = []any{numbers.AwaitingPayment, numbers.Pending, numbers.Active, numbers.PastDue}

func (x q) CreateNumber(ctx context.Context, n *numbers.Number) error {
	err := x.insert(ctx, `INSERT INTO numbers (`+numberCols+`)
		VALUES (:id, :owner_id, :mode, :e164, :country, :region, :locality, :status, :provider, :provider_ref, :order_ref,
			:monthly_micros, :reserved_until, :paid_through, :failure_code, :failure_reason, :created_at, :updated_at,
			:activated_at, :released_at)
		ON CONFLICT DO NOTHING`, n)
	if err != nil {
		return fmt.Errorf("create number: %w", err)
	}
	return nil
}

func (x q) getNumber(ctx context.Context, what, where string, args ...any) (*numbers.Number, error) {
	var n numbers.Number
	if err := x.get(ctx, x.reader(), &n, "SELECT "+numberCols+" FROM numbers WHERE "+where, args...); err != nil {
		return nil, fmt.Errorf("get number %s: %w", what, err)
	}
	return &n, nil
}

func (x q) GetNumber(ctx context.Context, ownerID string, mode core.Mode, id string) (*numbers.Number, error) {
	return x.getNumber(ctx, id, "id = ? AND owner_id = ? AND mode = ?", id, ownerID, mode)
}

func (x q) GetNumberByID(ctx context.Context, id string) (*numbers.Number, error) {
	return x.getNumber(ctx, id, "id = ?", id)
}

func (x q) GetNumberByOrderRef(ctx context.Context, provider, orderRef string) (*numbers.Number, error) {
	if orderRef == "" {
		return nil, fmt.Errorf("get number by order: %w", core.ErrNoRows)
	}
	return x.getNumber(ctx, orderRef, "provider = ? AND order_ref = ? ORDER BY created_at DESC LIMIT 1", provider, orderRef)
}

func (x q) GetHeldNumber(ctx context.Context, mode core.Mode, e164 string) (*numbers.Number, error) {
	return x.getNumber(ctx, e164, "mode = ? AND e164 = ? AND status IN ("+placeholders(len(heldStatuses))+")",
		append([]any{mode, e164}, heldStatuses...)...)
}

func (x q) ListNumbers(ctx context.Context, ownerID string, mode core.Mode, all bool) ([]numbers.Number, error) {
	where, args := "owner_id = ? AND mode = ?", []any{ownerID, mode}
	if !all {
		where += " AND status IN (" + placeholders(len(heldStatuses)) + ")"
		args = append(args, heldStatuses...)
	}
	var out []numbers.Number
	// An owner holds at most a few dozen numbers; the history of released
	// ones is bounded by the same limit.
	if err := x.sel(ctx, &out, "SELECT "+numberCols+" FROM numbers WHERE "+where+" ORDER BY created_at DESC, id DESC LIMIT 200", args...); err != nil {
		return nil, fmt.Errorf("list numbers: %w", err)
	}
	return out, nil
}

func (x q) HeldNumbers(ctx context.Context, mode core.Mode, e164s []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(e164s) == 0 {
		return out, nil
	}
	args := []any{mode}
	for _, e := range e164s {
		args = append(args, e)
	}
	args = append(args, heldStatuses...)
	var held []string
	if err := x.sel(ctx, &held, "SELECT e164 FROM numbers WHERE mode = ? AND e164 IN ("+placeholders(len(e164s))+
		") AND status IN ("+placeholders(len(heldStatuses))+")", args...); err != nil {
		return nil, fmt.Errorf("held numbers: %w", err)
	}
	for _, e := range held {
		out[e] = true
	}
	return out, nil
}

func (x q) CountNumbers(ctx context.Context, ownerID string, mode core.Mode) (map[numbers.Status]int, error) {
	var rows []struct {
		Status numbers.Status `db:"status"`
		N      int            `db:"n"`
	}
	if err := x.sel(ctx, &rows, "SELECT status, COUNT(*) AS n FROM numbers WHERE owner_id = ? AND mode = ? AND status IN ("+
		placeholders(len(heldStatuses))+") GROUP BY status", append([]any{ownerID, mode}, heldStatuses...)...); err != nil {
		return nil, fmt.Errorf("count numbers: %w", err)
	}
	out := map[numbers.Status]int{}
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

func (x q) UpdateNumber(ctx context.Context, n *numbers.Number, from ...numbers.Status) error {
	if len(from) == 0 {
		return errors.New("update number: no expected status given")
	}
	args := []any{n.Status, n.ProviderRef, n.OrderRef, n.ReservedUntil, n.PaidThrough, n.FailureCode, n.FailureReason,
		n.UpdatedAt, n.ActivatedAt, n.ReleasedAt, n.ID}
	for _, s := range from {
		args = append(args, s)
	}
	c, err := x.exec(ctx, `UPDATE numbers SET status = ?, provider_ref = ?, order_ref = ?, reserved_until = ?, paid_through = ?,
		failure_code = ?, failure_reason = ?, updated_at = ?, activated_at = ?, released_at = ?
		WHERE id = ? AND status IN (`+placeholders(len(from))+`)`, args...)
	if err == nil && c == 0 {
		err = x.missingOrConflict(ctx, "numbers", "id = ?", n.ID)
	}
	if err != nil {
		return fmt.Errorf("update number: %w", err)
	}
	return nil
}

func (x q) DueNumbers(ctx context.Context, now, stalePending time.Time, afterID string, limit int) ([]numbers.Number, error) {
	var out []numbers.Number
	// Lapsed reservations, renewals due and stale orders (numbers_reserved,
	// numbers_renewal, numbers_pending), paged by id so that past_due
	// numbers, which stay due until paid or released, cannot starve the
	// others.
	err := x.sel(ctx, &out, `SELECT `+numberCols+` FROM numbers
		WHERE id > ? AND ((status = ? AND reserved_until <= ?) OR (status IN (?, ?) AND paid_through <= ?)
			OR (status = ? AND updated_at <= ?))
		ORDER BY id LIMIT ?`,
		afterID, numbers.AwaitingPayment, now, numbers.Active, numbers.PastDue, now, numbers.Pending, stalePending, limit)
	if err != nil {
		return nil, fmt.Errorf("due numbers: %w", err)
	}
	return out, nil
}

const inboundCols = `id, owner_id, mode, number_id, from_number, to_number, pages, status, provider, provider_ref, media_url,
	document_key, bytes, text, text_status, text_method, text_note, failure_reason, received_at, created_at, updated_at, processed_at,
	read_at`

func (x q) CreateInboundFax(ctx context.Context, f *inbox.InboundFax) error {
	err := x.insert(ctx, `INSERT INTO inbound_faxes (`+inboundCols+`)
		VALUES (:id, :owner_id, :mode, :number_id, :from_number, :to_number, :pages, :status, :provider, :provider_ref, :media_url,
			:document_key, :bytes, :text, :text_status, :text_method, :text_note, :failure_reason, :received_at, :created_at,
			:updated_at, :processed_at, :read_at)
		ON CONFLICT DO NOTHING`, f)
	if err != nil {
		return fmt.Errorf("create inbound fax: %w", err)
	}
	return nil
}

func (x q) getInbound(ctx context.Context, what, where string, args ...any) (*inbox.InboundFax, error) {
	var f inbox.InboundFax
	if err := x.get(ctx, x.reader(), &f, "SELECT "+inboundCols+" FROM inbound_faxes WHERE "+where, args...); err != nil {
		return nil, fmt.Errorf("get inbound fax %s: %w", what, err)
	}
	return &f, nil
}

func (x q) GetInboundFax(ctx context.Context, ownerID string, mode core.Mode, id string) (*inbox.InboundFax, error) {
	return x.getInbound(ctx, id, "id = ? AND owner_id = ? AND mode = ?", id, ownerID, mode)
}

func (x q) GetInboundFaxByID(ctx context.Context, id string) (*inbox.InboundFax, error) {
	return x.getInbound(ctx, id, "id = ?", id)
}

func (x q) GetInboundFaxByRef(ctx context.Context, provider, providerRef string) (*inbox.InboundFax, error) {
	return x.getInbound(ctx, providerRef, "provider = ? AND provider_ref = ?", provider, providerRef)
}

// ListInboundFaxes lists newest first, continuing after a cursor id (the
// same (created_at, id) order as faxes).
func (x q) ListInboundFaxes(ctx context.Context, f inbox.Filter) ([]inbox.InboundFax, error) {
	where, args := "owner_id = ? AND mode = ?", []any{f.OwnerID, f.Mode}
	if f.NumberID != "" {
		where += " AND number_id = ?"
		args = append(args, f.NumberID)
	}
	if f.StartingAfter != "" {
		var c cursor
		if err := x.get(ctx, x.reader(), &c, "SELECT created_at, id FROM inbound_faxes WHERE id = ? AND owner_id = ? AND mode = ?",
			f.StartingAfter, f.OwnerID, f.Mode); err != nil {
			return nil, fmt.Errorf("list inbound faxes: cursor: %w", err)
		}
		where += " AND (created_at < ? OR (created_at = ? AND id < ?))"
		args = append(args, c.CreatedAt, c.CreatedAt, c.ID)
	}
	// A list carries a preview of the text, not all of it.
	cols := `id, owner_id, mode, number_id, from_number, to_number, pages, status, provider, provider_ref, '' AS media_url,
		document_key, bytes, SUBSTR(text, 1, ?) AS text, text_status, text_method, text_note, failure_reason, received_at,
		created_at, updated_at, processed_at, read_at`
	var out []inbox.InboundFax
	if err := x.sel(ctx, &out, "SELECT "+cols+" FROM inbound_faxes WHERE "+where+" ORDER BY created_at DESC, id DESC"+limit(f.Limit),
		append([]any{inbox.PreviewChars}, args...)...); err != nil {
		return nil, fmt.Errorf("list inbound faxes: %w", err)
	}
	return out, nil
}

func (x q) PurgeableInbound(ctx context.Context, before time.Time, n int) ([]inbox.InboundFax, error) {
	var out []inbox.InboundFax
	if err := x.sel(ctx, &out, `SELECT id, owner_id, mode, number_id, from_number, to_number, pages, status, provider, provider_ref,
		'' AS media_url, document_key, bytes, '' AS text, text_status, text_method, text_note, failure_reason, received_at, created_at,
		updated_at, processed_at FROM inbound_faxes WHERE status IN (?, ?) AND received_at < ? ORDER BY received_at LIMIT ?`,
		inbox.Received, inbox.Failed, before, n); err != nil {
		return nil, fmt.Errorf("purgeable inbound faxes: %w", err)
	}
	return out, nil
}

func (x q) DeleteInboundFax(ctx context.Context, id string) error {
	n, err := x.exec(ctx, "DELETE FROM inbound_faxes WHERE id = ?", id)
	if err == nil && n == 0 {
		err = core.ErrNoRows
	}
	if err != nil {
		return fmt.Errorf("delete inbound fax %s: %w", id, err)
	}
	return nil
}

// MarkInboundFaxRead sets read_at once, on a received fax.
func (x q) MarkInboundFaxRead(ctx context.Context, id string, at time.Time) error {
	n, err := x.exec(ctx, "UPDATE inbound_faxes SET read_at = ? WHERE id = ? AND status = ? AND read_at IS NULL", at, id, inbox.Received)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "inbound_faxes", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("mark inbound fax %s read: %w", id, err)
	}
	return nil
}

func (x q) UpdateInboundFax(ctx context.Context, f *inbox.InboundFax, from ...inbox.Status) error {
	if len(from) == 0 {
		return errors.New("update inbound fax: no expected status given")
	}
	args := []any{f.Status, f.Pages, f.MediaURL, f.DocumentKey, f.Bytes, f.Text, f.TextStatus, f.TextMethod, f.TextNote,
		f.FailureReason, f.UpdatedAt, f.ProcessedAt, f.ID}
	for _, s := range from {
		args = append(args, s)
	}
	c, err := x.exec(ctx, `UPDATE inbound_faxes SET status = ?, pages = ?, media_url = ?, document_key = ?, bytes = ?, text = ?,
		text_status = ?, text_method = ?, text_note = ?, failure_reason = ?, updated_at = ?, processed_at = ?
		WHERE id = ? AND status IN (`+placeholders(len(from))+`)`, args...)
	if err == nil && c == 0 {
		err = x.missingOrConflict(ctx, "inbound_faxes", "id = ?", f.ID)
	}
	if err != nil {
		return fmt.Errorf("update inbound fax: %w", err)
	}
	return nil
}
