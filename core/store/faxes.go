package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
)

const faxCols = `id, owner_id, mode, status, destination, document_id, pages, cover, cover_text, price_micros, currency,
	payment_method, pages_sent, attempts, failure_code, failure_reason, draft_id, created_at, updated_at, completed_at,
	next_attempt_at, from_number, options, batch_id, faxed_sha256, faxed_pages, sent_by_kind, sent_by_id, sent_by_name`

func (x q) CreateFax(ctx context.Context, o *faxes.Fax) error {
	err := x.insert(ctx, `INSERT INTO faxes (`+faxCols+`)
		VALUES (:id, :owner_id, :mode, :status, :destination, :document_id, :pages, :cover, :cover_text, :price_micros,
			:currency, :payment_method, :pages_sent, :attempts, :failure_code, :failure_reason, :draft_id, :created_at,
			:updated_at, :completed_at, :next_attempt_at, :from_number, :options, :batch_id, :faxed_sha256, :faxed_pages,
			:sent_by_kind, :sent_by_id, :sent_by_name)
		ON CONFLICT DO NOTHING`, o)
	if err != nil {
		return fmt.Errorf("create fax: %w", err)
	}
	return nil
}

func (x q) GetFax(ctx context.Context, ownerID string, mode core.Mode, id string) (*faxes.Fax, error) {
	var o faxes.Fax
	if err := x.get(ctx, x.reader(), &o, "SELECT "+faxCols+" FROM faxes WHERE id = ? AND owner_id = ? AND mode = ?", id, ownerID, mode); err != nil {
		return nil, fmt.Errorf("get fax: %w", err)
	}
	return &o, nil
}

func (x q) GetFaxByID(ctx context.Context, id string) (*faxes.Fax, error) {
	var o faxes.Fax
	if err := x.get(ctx, x.reader(), &o, "SELECT "+faxCols+" FROM faxes WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get fax: %w", err)
	}
	return &o, nil
}

// cursor is the sort key of the item a page starts after.
type cursor struct {
	CreatedAt time.Time `db:"created_at"`
	ID        string    `db:"id"`
}

// ListFaxes lists newest first. StartingAfter must name a fax of the
// same owner and mode (ErrNoRows otherwise); the page holds the faxes after
// it in that fax.
func (x q) ListFaxes(ctx context.Context, f faxes.Filter) ([]faxes.Fax, error) {
	where, args := "owner_id = ? AND mode = ?", []any{f.OwnerID, f.Mode}
	if f.Status != "" {
		where += " AND status = ?"
		args = append(args, f.Status)
	}
	if f.CreatedFrom != nil {
		where += " AND created_at >= ?"
		args = append(args, *f.CreatedFrom)
	}
	if f.CreatedTo != nil {
		where += " AND created_at < ?"
		args = append(args, *f.CreatedTo)
	}
	if f.StartingAfter != "" {
		var c cursor
		if err := x.get(ctx, x.reader(), &c, "SELECT created_at, id FROM faxes WHERE id = ? AND owner_id = ? AND mode = ?",
			f.StartingAfter, f.OwnerID, f.Mode); err != nil {
			return nil, fmt.Errorf("list faxes: cursor: %w", err)
		}
		where += " AND (created_at < ? OR (created_at = ? AND id < ?))"
		args = append(args, c.CreatedAt, c.CreatedAt, c.ID)
	}
	var out []faxes.Fax
	if err := x.sel(ctx, &out, "SELECT "+faxCols+" FROM faxes WHERE "+where+" ORDER BY created_at DESC, id DESC"+limit(f.Limit), args...); err != nil {
		return nil, fmt.Errorf("list faxes: %w", err)
	}
	return out, nil
}

// UpdateFax writes o's mutable fields if the stored status is one of from:
// ErrConflict if it is not, ErrNoRows if there is no such fax. o's
// document as faxed is written only to a fax that has none, as
// SetFaxedDocument does: the delivery records it with the move to sending,
// one statement instead of two on the delivery's path.
func (x q) UpdateFax(ctx context.Context, o *faxes.Fax, from ...faxes.Status) error {
	return x.MoveFax(ctx, faxes.Move{Fax: o, From: from})
}

// updateFaxSQL is UpdateFax's statement for n expected statuses, and
// updateFaxArgs its arguments. Both CASEs test the stored faxed_sha256 as
// it was before the UPDATE (SET's expressions read the old row on both
// databases). With read (Move.Read) the fax must also still have read's
// attempts and updated_at: timestamps are written truncated to the
// microsecond (timeArg), so a time read back, or the one just written,
// compares equal to the stored one on both databases.
func updateFaxSQL(n int, read bool) string {
	query := `UPDATE faxes SET status = ?, pages_sent = ?, attempts = ?, failure_code = ?, failure_reason = ?,
		updated_at = ?, completed_at = ?, next_attempt_at = ?,
		faxed_pages = CASE WHEN faxed_sha256 = '' AND ? <> '' THEN ? ELSE faxed_pages END,
		faxed_sha256 = CASE WHEN faxed_sha256 = '' THEN ? ELSE faxed_sha256 END
		WHERE id = ? AND status IN (` + placeholders(n) + `)`
	if read {
		query += " AND attempts = ? AND updated_at = ?"
	}
	return query
}

func updateFaxArgs(o *faxes.Fax, from []faxes.Status, read *faxes.Fax) []any {
	args := []any{o.Status, o.PagesSent, o.Attempts, o.FailureCode, o.FailureReason, o.UpdatedAt, o.CompletedAt, o.NextAttemptAt,
		o.FaxedSHA256, o.FaxedPages, o.FaxedSHA256, o.ID}
	for _, s := range from {
		args = append(args, s)
	}
	if read != nil {
		args = append(args, read.Attempts, read.UpdatedAt)
	}
	return args
}

// MoveFax writes m.Fax if its stored status is one of m.From (UpdateFax),
// and only then m's event (AppendEvent), started attempt (CreateAttempt),
// updated attempt (UpdateAttempt) and settlement (SettleHold). On
// PostgreSQL they are one statement, data-modifying CTEs that each take
// their row from the fax's UPDATE … RETURNING: the delivery's move to
// sending and each outcome are one round trip instead of up to six, and
// need no transaction around them. SQLite runs them one after the other,
// in-process calls there, in a transaction. A fax not in a From status, or
// not as m.Read, writes nothing (ErrConflict; ErrNoRows when there is no
// such fax); an attempt id taken (ErrExists), an updated attempt missing
// (ErrNoRows) or a hold not settled (faxes.ErrHoldNotSettled) fails the
// move, whose writes are taken back: on PostgreSQL by the statement
// failing (faxhub_refuse, migration 00030), on SQLite by the move's own
// transaction, or inside the caller's by the caller's.
func (x q) MoveFax(ctx context.Context, m faxes.Move) error {
	if len(m.From) == 0 {
		return errors.New("move fax: no expected status given")
	}
	o := m.Fax
	query, args := updateFaxSQL(len(m.From), m.Read != nil), updateFaxArgs(o, m.From, m.Read)
	if m.Event == nil && m.Started == nil && m.Updated == nil && m.Settle == "" {
		return x.updateFax(ctx, o.ID, query, args)
	}
	if x.db.dialect != DialectPostgres {
		return x.ownTx(ctx, func(x q) error {
			if err := x.updateFax(ctx, o.ID, query, args); err != nil {
				return err
			}
			if m.Event != nil {
				if err := x.AppendEvent(ctx, m.Event); err != nil {
					return err
				}
			}
			if m.Started != nil {
				if err := x.CreateAttempt(ctx, m.Started); err != nil {
					return err
				}
			}
			if m.Updated != nil {
				if err := x.UpdateAttempt(ctx, m.Updated); err != nil {
					return err
				}
			}
			if m.Settle != "" {
				if _, err := x.SettleHold(ctx, o.ID, m.Settle, o.UpdatedAt); err != nil {
					return fmt.Errorf("move fax %s: %w (%v)", o.ID, faxes.ErrHoldNotSettled, err)
				}
			}
			return nil
		})
	}
	query = "WITH f AS (" + query + " RETURNING id)"
	// refusals are the CASE arms that fail the statement when the fax
	// moved and a part that goes with it wrote nothing.
	var refusals string
	if m.Event != nil {
		query += ", e AS (" + appendEventSQL(" FROM f") + ")"
		args = append(args, appendEventArgs(m.Event)...)
	}
	if a := m.Started; a != nil {
		values := attemptArgs(a)
		// No ON CONFLICT: a taken id fails the statement itself.
		query += ", s AS (INSERT INTO attempts (" + attemptCols + ") SELECT " + placeholders(len(values)) + " FROM f)"
		args = append(args, values...)
	}
	if a := m.Updated; a != nil {
		query += ", u AS (UPDATE attempts SET " + updateAttemptSet + " FROM f WHERE attempts.id = ? RETURNING 1)"
		args = append(args, updateAttemptArgs(a)...)
		refusals += " WHEN NOT EXISTS (SELECT 1 FROM u) THEN faxhub_refuse('" + refuseAttempt + "')"
	}
	if m.Settle != "" {
		st, err := settleHoldCTEs(o.ID, m.Settle, o.UpdatedAt, "EXISTS (SELECT 1 FROM f)")
		if err != nil {
			return fmt.Errorf("move fax: %w", err)
		}
		query += ", " + st.ctes
		args = append(args, st.args...)
		refusals += " WHEN NOT EXISTS (SELECT 1 FROM hold) THEN faxhub_refuse('" + refuseNoHold + "')" +
			" WHEN NOT EXISTS (SELECT 1 FROM ins) THEN faxhub_refuse('" + refuseSettled + "')" + st.refusals()
	}
	var faxed int
	err := x.writer().QueryRowxContext(ctx, x.db.w.Rebind(query+" SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM f) THEN 0"+refusals+" ELSE 1 END"),
		x.db.args(args)...).Scan(&faxed)
	var refused *pgconn.PgError
	switch {
	case errors.As(err, &refused) && refused.Code == refuseCode && refused.Message == refuseAttempt:
		return fmt.Errorf("update attempt: %w", core.ErrNoRows)
	case errors.As(err, &refused) && refused.Code == refuseCode:
		return fmt.Errorf("move fax %s: %w (%s)", o.ID, faxes.ErrHoldNotSettled, refused.Message)
	case err != nil:
		return fmt.Errorf("move fax: %w", dbErr(err))
	case faxed == 0:
		return fmt.Errorf("update fax: %w", x.missingOrConflict(ctx, "faxes", "id = ?", o.ID))
	}
	return nil
}

// The refusals of the statements that move a fax or settle a hold on
// PostgreSQL (MoveFax, SettleHold): faxhub_refuse's SQLSTATE and the
// reasons it is given (written into the statements as literals: no quotes
// in them). SQLite's settle gives the same reasons.
const (
	refuseCode      = "FX001"
	refuseAttempt   = "the updated attempt is missing"
	refuseNoHold    = "the fax has no credit hold"
	refuseSettled   = "the hold is settled already"
	refuseNoBalance = "no balance row for the account of the hold"
	refuseUnmarked  = "the hold was marked settled without its settlement"
)

// updateFax runs UpdateFax's statement, explaining one that matched
// nothing.
func (x q) updateFax(ctx context.Context, id, query string, args []any) error {
	n, err := x.exec(ctx, query, args...)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "faxes", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("update fax: %w", err)
	}
	return nil
}

func (x q) SetFaxedDocument(ctx context.Context, faxID, sha256 string, pages int) error {
	if _, err := x.exec(ctx, `UPDATE faxes SET faxed_sha256 = ?, faxed_pages = ? WHERE id = ? AND faxed_sha256 = ''`, sha256, pages, faxID); err != nil {
		return fmt.Errorf("set faxed document: %w", err)
	}
	return nil
}

// faxDocumentRow is a fax, its document and its owner's fax settings,
// read together.
type faxDocumentRow struct {
	faxes.Fax
	Document documents.Document `db:"d"`
	// Settings is nil when the owner set none.
	Settings *faxes.Settings `db:"owner_settings"`
}

var faxWithDocument = "SELECT " + prefixed("f.", faxCols) + ", " + nestedCols("d", documentCols) +
	`, (SELECT settings FROM fax_settings s WHERE s.owner_id = f.owner_id) AS owner_settings
	FROM faxes f JOIN documents d ON d.id = f.document_id AND d.owner_id = f.owner_id AND d.mode = f.mode AND d.purged_at IS NULL
	WHERE f.id = ?`

// FaxWithDocument reads what composing a fax's document as faxed needs in
// one statement: a delivery does it before its attempt, and on PostgreSQL
// every statement is a round trip.
func (x q) FaxWithDocument(ctx context.Context, faxID string) (*faxes.Fax, *documents.Document, faxes.Settings, error) {
	var r faxDocumentRow
	if err := x.get(ctx, x.reader(), &r, faxWithDocument, faxID); err != nil {
		return nil, nil, faxes.Settings{}, fmt.Errorf("fax with document: %w", err)
	}
	var st faxes.Settings
	if r.Settings != nil {
		st = *r.Settings
	}
	return &r.Fax, &r.Document, st, nil
}

func (x q) GetFaxSettings(ctx context.Context, ownerID string) (*faxes.Settings, error) {
	var st faxes.Settings
	if err := x.get(ctx, x.reader(), &st, "SELECT settings FROM fax_settings WHERE owner_id = ?", ownerID); err != nil {
		return nil, fmt.Errorf("get fax settings: %w", err)
	}
	return &st, nil
}

func (x q) PutFaxSettings(ctx context.Context, ownerID string, st faxes.Settings, at time.Time) error {
	if _, err := x.exec(ctx, `INSERT INTO fax_settings (owner_id, settings, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (owner_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`, ownerID, st, at); err != nil {
		return fmt.Errorf("put fax settings: %w", err)
	}
	return nil
}

const attemptCols = `id, fax_id, number, provider, provider_ref, status, failure_code, failure_reason, retryable,
	pages_sent, duration_ms, started_at, finished_at`

// attemptArgs are an attempt's values in attemptCols' order, for
// CreateAttempt and MoveFax's insert.
func attemptArgs(a *faxes.Attempt) []any {
	return []any{a.ID, a.FaxID, a.Number, a.Provider, a.ProviderRef, a.Status, a.FailureCode, a.FailureReason,
		a.Retryable, a.PagesSent, a.DurationMS, a.StartedAt, a.FinishedAt}
}

func (x q) CreateAttempt(ctx context.Context, a *faxes.Attempt) error {
	args := attemptArgs(a)
	n, err := x.exec(ctx, "INSERT INTO attempts ("+attemptCols+") VALUES ("+placeholders(len(args))+") ON CONFLICT DO NOTHING", args...)
	if err == nil && n == 0 {
		err = core.ErrExists
	}
	if err != nil {
		return fmt.Errorf("create attempt: %w", err)
	}
	return nil
}

// updateAttemptSet and updateAttemptArgs are UpdateAttempt's (and
// MoveFax's) SET clause and its arguments, the attempt's id last.
const updateAttemptSet = `provider_ref = ?, status = ?, failure_code = ?, failure_reason = ?,
	retryable = ?, pages_sent = ?, duration_ms = ?, finished_at = ?`

func updateAttemptArgs(a *faxes.Attempt) []any {
	return []any{a.ProviderRef, a.Status, a.FailureCode, a.FailureReason, a.Retryable, a.PagesSent, a.DurationMS, a.FinishedAt, a.ID}
}

// UpdateAttempt writes the outcome fields of an attempt.
func (x q) UpdateAttempt(ctx context.Context, a *faxes.Attempt) error {
	n, err := x.exec(ctx, "UPDATE attempts SET "+updateAttemptSet+" WHERE id = ?", updateAttemptArgs(a)...)
	if err != nil {
		return fmt.Errorf("update attempt: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("update attempt: %w", core.ErrNoRows)
	}
	return nil
}

func (x q) LatestAttempt(ctx context.Context, faxID string) (*faxes.Attempt, error) {
	var a faxes.Attempt
	if err := x.get(ctx, x.reader(), &a, "SELECT "+attemptCols+" FROM attempts WHERE fax_id = ? ORDER BY number DESC LIMIT 1", faxID); err != nil {
		return nil, fmt.Errorf("latest attempt: %w", err)
	}
	return &a, nil
}

// faxAttemptRow is a fax and its latest attempt, read together.
type faxAttemptRow struct {
	faxes.Fax
	Attempt faxes.Attempt `db:"a"`
}

// faxWithLatestAttempt selects a fax's columns as they are named and its
// latest attempt's as a.<column>, for faxAttemptRow.
var faxWithLatestAttempt = "SELECT " + prefixed("f.", faxCols) + ", " + nestedCols("a", attemptCols) +
	" FROM faxes f JOIN attempts a ON a.fax_id = f.id WHERE f.id = ? ORDER BY a.number DESC LIMIT 1"

// FaxWithLatestAttempt reads a fax and its latest attempt in one statement:
// a delivery's outcome needs both, and on PostgreSQL every statement is a
// round trip.
func (x q) FaxWithLatestAttempt(ctx context.Context, faxID string) (*faxes.Fax, *faxes.Attempt, error) {
	var r faxAttemptRow
	if err := x.get(ctx, x.reader(), &r, faxWithLatestAttempt, faxID); err != nil {
		return nil, nil, fmt.Errorf("fax with latest attempt: %w", err)
	}
	return &r.Fax, &r.Attempt, nil
}

// ListAttempts lists a fax's attempts, first first.
func (x q) ListAttempts(ctx context.Context, faxID string) ([]faxes.Attempt, error) {
	var out []faxes.Attempt
	if err := x.sel(ctx, &out, "SELECT "+attemptCols+" FROM attempts WHERE fax_id = ? ORDER BY number", faxID); err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return out, nil
}

const previewCols = "id, owner_id, mode, document_id, pages, sha256, resolution, created_at, expires_at"

func (x q) CreatePreview(ctx context.Context, p *faxes.Preview) error {
	if err := x.insert(ctx, `INSERT INTO previews (`+previewCols+`)
		VALUES (:id, :owner_id, :mode, :document_id, :pages, :sha256, :resolution, :created_at, :expires_at)`, p); err != nil {
		return fmt.Errorf("create preview: %w", err)
	}
	return nil
}

func (x q) GetPreview(ctx context.Context, id string) (*faxes.Preview, error) {
	var p faxes.Preview
	if err := x.get(ctx, x.reader(), &p, "SELECT "+previewCols+" FROM previews WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get preview: %w", err)
	}
	return &p, nil
}

func (x q) ExpiredPreviews(ctx context.Context, t time.Time, n int) ([]faxes.Preview, error) {
	var out []faxes.Preview
	if err := x.sel(ctx, &out, "SELECT "+previewCols+" FROM previews WHERE expires_at < ? ORDER BY expires_at"+limit(n), t); err != nil {
		return nil, fmt.Errorf("expired previews: %w", err)
	}
	return out, nil
}

func (x q) DeletePreview(ctx context.Context, id string) error {
	if _, err := x.exec(ctx, "DELETE FROM previews WHERE id = ?", id); err != nil {
		return fmt.Errorf("delete preview: %w", err)
	}
	return nil
}

// FaxedOfDocument lists the faxes of a document, any of which may have a
// document as faxed, for the purge of the document's blobs.
func (x q) FaxedOfDocument(ctx context.Context, documentID string) ([]faxes.Fax, error) {
	var out []faxes.Fax
	if err := x.sel(ctx, &out, "SELECT "+faxCols+" FROM faxes WHERE document_id = ?", documentID); err != nil {
		return nil, fmt.Errorf("faxes of document: %w", err)
	}
	return out, nil
}
