package store

import (
	"context"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

const batchCols = `id, owner_id, mode, document_id, recipients, remaining, price_micros, created_at, completed_at`

func (x q) CreateBatch(ctx context.Context, b *faxes.Batch) error {
	err := x.insert(ctx, `INSERT INTO batches (`+batchCols+`)
		VALUES (:id, :owner_id, :mode, :document_id, :recipients, :remaining, :price_micros, :created_at, :completed_at)
		ON CONFLICT DO NOTHING`, b)
	if err != nil {
		return fmt.Errorf("create batch: %w", err)
	}
	return nil
}

func (x q) GetBatch(ctx context.Context, ownerID string, mode core.Mode, id string) (*faxes.Batch, error) {
	var b faxes.Batch
	if err := x.get(ctx, x.reader(), &b, "SELECT "+batchCols+" FROM batches WHERE id = ? AND owner_id = ? AND mode = ?", id, ownerID, mode); err != nil {
		return nil, fmt.Errorf("get batch: %w", err)
	}
	return &b, nil
}

// ListBatches lists newest first, after the batch StartingAfter names
// (ErrNoRows if it names none of the owner's in mode).
func (x q) ListBatches(ctx context.Context, f faxes.BatchFilter) ([]faxes.Batch, error) {
	where, args := "owner_id = ? AND mode = ?", []any{f.OwnerID, f.Mode}
	if f.StartingAfter != "" {
		var c cursor
		if err := x.get(ctx, x.reader(), &c, "SELECT created_at, id FROM batches WHERE id = ? AND owner_id = ? AND mode = ?",
			f.StartingAfter, f.OwnerID, f.Mode); err != nil {
			return nil, fmt.Errorf("list batches: cursor: %w", err)
		}
		where += " AND (created_at < ? OR (created_at = ? AND id < ?))"
		args = append(args, c.CreatedAt, c.CreatedAt, c.ID)
	}
	var out []faxes.Batch
	if err := x.sel(ctx, &out, "SELECT "+batchCols+" FROM batches WHERE "+where+" ORDER BY created_at DESC, id DESC"+limit(f.Limit), args...); err != nil {
		return nil, fmt.Errorf("list batches: %w", err)
	}
	return out, nil
}

func (x q) ListBatchFaxes(ctx context.Context, batchID string) ([]faxes.BatchFax, error) {
	var out []faxes.BatchFax
	if err := x.sel(ctx, &out, "SELECT id, status, destination FROM faxes WHERE batch_id = ? ORDER BY id", batchID); err != nil {
		return nil, fmt.Errorf("list batch faxes: %w", err)
	}
	return out, nil
}

// EndBatchFax decrements remaining in one statement: on PostgreSQL the
// UPDATE takes the row's lock until the transaction ends, so concurrent
// ends of a batch's faxes are counted one after the other and exactly one
// of them returns 0; SQLite has one writer.
func (x q) EndBatchFax(ctx context.Context, batchID string, at time.Time) (int, error) {
	var remaining int
	err := x.write(ctx, func(x q) error {
		return x.get(ctx, x.writer(), &remaining, `UPDATE batches SET remaining = remaining - 1,
			completed_at = CASE WHEN remaining = 1 THEN ? ELSE completed_at END
			WHERE id = ? AND remaining > 0 RETURNING remaining`, at, batchID)
	})
	if err != nil {
		return 0, fmt.Errorf("end batch fax: %w", err)
	}
	return remaining, nil
}
