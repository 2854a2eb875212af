package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/authstate"
)

var (
	_ authstate.PasskeyStore   = (*DB)(nil)
	_ authstate.PasskeyQueries = (*Tx)(nil)
)

// InPasskeyTx runs fn in one transaction, like InTx.
func (db *DB) InPasskeyTx(ctx context.Context, fn func(authstate.PasskeyQueries) error) error {
	return db.inTx(ctx, func(t *sqlx.Tx) error { return fn(&Tx{q: q{db: db, tx: t}}) })
}

const passkeyCols = `id, owner_id, credential_id, name, public_key, attestation_type, aaguid, sign_count, transports,
	user_verified, backup_eligible, backup_state, created_at, last_used_at`

func (x q) CreatePasskey(ctx context.Context, p *authstate.Passkey) error {
	err := x.insert(ctx, `INSERT INTO passkeys (`+passkeyCols+`)
		VALUES (:id, :owner_id, :credential_id, :name, :public_key, :attestation_type, :aaguid, :sign_count, :transports,
			:user_verified, :backup_eligible, :backup_state, :created_at, :last_used_at)
		ON CONFLICT DO NOTHING`, p)
	if err != nil {
		return fmt.Errorf("create passkey: %w", err)
	}
	return nil
}

func (x q) GetPasskeyByCredentialID(ctx context.Context, credentialID string) (*authstate.Passkey, error) {
	var p authstate.Passkey
	if err := x.get(ctx, x.reader(), &p, "SELECT "+passkeyCols+" FROM passkeys WHERE credential_id = ?", credentialID); err != nil {
		return nil, fmt.Errorf("get passkey: %w", err)
	}
	return &p, nil
}

func (x q) ListPasskeys(ctx context.Context, ownerID string) ([]authstate.Passkey, error) {
	var ps []authstate.Passkey
	if err := x.sel(ctx, &ps, "SELECT "+passkeyCols+" FROM passkeys WHERE owner_id = ? ORDER BY created_at, id", ownerID); err != nil {
		return nil, fmt.Errorf("list passkeys: %w", err)
	}
	return ps, nil
}

func (x q) RenamePasskey(ctx context.Context, ownerID, id, name string) error {
	n, err := x.exec(ctx, "UPDATE passkeys SET name = ? WHERE id = ? AND owner_id = ?", name, id, ownerID)
	if err == nil && n == 0 {
		err = core.ErrNoRows
	}
	if err != nil {
		return fmt.Errorf("rename passkey: %w", err)
	}
	return nil
}

// DeletePasskey counts and deletes in one transaction. On PostgreSQL the
// owner's passkey rows are locked first: two concurrent deletes of
// different passkeys would otherwise both see two left and remove both.
// SQLite transactions are serialized by the write lock taken at BEGIN.
func (x q) DeletePasskey(ctx context.Context, ownerID, id string) error {
	err := x.atomic(ctx, func(x q) error {
		lock := ""
		if x.db.dialect == DialectPostgres {
			lock = " FOR UPDATE"
		}
		var ids []string
		if err := x.selOn(ctx, x.writer(), &ids, "SELECT id FROM passkeys WHERE owner_id = ? ORDER BY id"+lock, ownerID); err != nil {
			return err
		}
		found := false
		for _, v := range ids {
			found = found || v == id
		}
		switch {
		case !found:
			return core.ErrNoRows
		case len(ids) < 2:
			return core.ErrConflict
		}
		_, err := x.exec(ctx, "DELETE FROM passkeys WHERE id = ? AND owner_id = ?", id, ownerID)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete passkey: %w", err)
	}
	return nil
}

func (x q) RecordPasskeyUse(ctx context.Context, id string, signCount int64, backupState bool, at time.Time) error {
	n, err := x.exec(ctx, "UPDATE passkeys SET sign_count = ?, backup_state = ?, last_used_at = ? WHERE id = ?", signCount, backupState, at, id)
	if err == nil && n == 0 {
		err = core.ErrNoRows
	}
	if err != nil {
		return fmt.Errorf("record passkey use: %w", err)
	}
	return nil
}

const challengeCols = "hash, purpose, owner_id, binding, session, created_at, expires_at, used_at"

func (x q) CreateChallenge(ctx context.Context, c *authstate.WebAuthnChallenge) error {
	err := x.insert(ctx, `INSERT INTO webauthn_challenges (`+challengeCols+`)
		VALUES (:hash, :purpose, :owner_id, :binding, :session, :created_at, :expires_at, :used_at) ON CONFLICT DO NOTHING`, c)
	if err != nil {
		return fmt.Errorf("create webauthn challenge: %w", err)
	}
	return nil
}

// ClaimChallenge is a compare-and-set on used_at followed by a read of the
// row, both in one transaction (or savepoint).
func (x q) ClaimChallenge(ctx context.Context, hash, purpose string, at time.Time) (*authstate.WebAuthnChallenge, error) {
	var c authstate.WebAuthnChallenge
	err := x.atomic(ctx, func(x q) error {
		n, err := x.exec(ctx, `UPDATE webauthn_challenges SET used_at = ?
			WHERE hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?`, at, hash, purpose, at)
		if err == nil && n == 0 {
			err = x.missingOrConflict(ctx, "webauthn_challenges", "hash = ? AND purpose = ?", hash, purpose)
		}
		if err != nil {
			return err
		}
		return x.get(ctx, x.writer(), &c, "SELECT "+challengeCols+" FROM webauthn_challenges WHERE hash = ?", hash)
	})
	if err != nil {
		return nil, fmt.Errorf("claim webauthn challenge: %w", err)
	}
	return &c, nil
}

const emailTokenCols = "hash, purpose, email, name, owner_id, created_at, expires_at, used_at"

func (x q) CreateEmailToken(ctx context.Context, t *authstate.EmailToken) error {
	err := x.insert(ctx, `INSERT INTO email_tokens (`+emailTokenCols+`)
		VALUES (:hash, :purpose, :email, :name, :owner_id, :created_at, :expires_at, :used_at) ON CONFLICT DO NOTHING`, t)
	if err != nil {
		return fmt.Errorf("create email token: %w", err)
	}
	return nil
}

func (x q) GetEmailToken(ctx context.Context, hash string) (*authstate.EmailToken, error) {
	var t authstate.EmailToken
	if err := x.get(ctx, x.reader(), &t, "SELECT "+emailTokenCols+" FROM email_tokens WHERE hash = ?", hash); err != nil {
		return nil, fmt.Errorf("get email token: %w", err)
	}
	return &t, nil
}

func (x q) SetEmailTokenOwner(ctx context.Context, hash, ownerID string) error {
	n, err := x.exec(ctx, "UPDATE email_tokens SET owner_id = ? WHERE hash = ? AND (owner_id IS NULL OR owner_id = ?)", ownerID, hash, ownerID)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "email_tokens", "hash = ?", hash)
	}
	if err != nil {
		return fmt.Errorf("set email token owner: %w", err)
	}
	return nil
}

func (x q) ClaimEmailToken(ctx context.Context, hash, purpose string, at time.Time) (*authstate.EmailToken, error) {
	var t authstate.EmailToken
	err := x.atomic(ctx, func(x q) error {
		n, err := x.exec(ctx, `UPDATE email_tokens SET used_at = ?
			WHERE hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?`, at, hash, purpose, at)
		if err == nil && n == 0 {
			err = x.missingOrConflict(ctx, "email_tokens", "hash = ? AND purpose = ?", hash, purpose)
		}
		if err != nil {
			return err
		}
		return x.get(ctx, x.writer(), &t, "SELECT "+emailTokenCols+" FROM email_tokens WHERE hash = ?", hash)
	})
	if err != nil {
		return nil, fmt.Errorf("claim email token: %w", err)
	}
	return &t, nil
}

func (x q) PurgeWebAuthn(ctx context.Context, before time.Time) error {
	if _, err := x.exec(ctx, "DELETE FROM webauthn_challenges WHERE expires_at < ?", before); err != nil {
		return fmt.Errorf("purge webauthn challenges: %w", err)
	}
	if _, err := x.exec(ctx, "DELETE FROM email_tokens WHERE expires_at < ?", before); err != nil {
		return fmt.Errorf("purge email tokens: %w", err)
	}
	return nil
}
