package store

import (
	"context"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
)

const ownerCols = "id, email, name, email_verified_at, created_at"

func (x q) CreateOwner(ctx context.Context, o *accounts.Owner) error {
	err := x.insert(ctx, `INSERT INTO owners (`+ownerCols+`)
		VALUES (:id, :email, :name, :email_verified_at, :created_at) ON CONFLICT DO NOTHING`, o)
	if err != nil {
		return fmt.Errorf("create owner: %w", err)
	}
	return nil
}

func (x q) GetOwner(ctx context.Context, id string) (*accounts.Owner, error) {
	var o accounts.Owner
	if err := x.get(ctx, x.reader(), &o, "SELECT "+ownerCols+" FROM owners WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get owner: %w", err)
	}
	return &o, nil
}

func (x q) GetOwnerByEmail(ctx context.Context, email string) (*accounts.Owner, error) {
	var o accounts.Owner
	if err := x.get(ctx, x.reader(), &o, "SELECT "+ownerCols+" FROM owners WHERE email = ?", email); err != nil {
		return nil, fmt.Errorf("get owner by email: %w", err)
	}
	return &o, nil
}

const apiKeyCols = "id, owner_id, mode, name, hash, hint, created_at, last_used_at, revoked_at"

func (x q) CreateAPIKey(ctx context.Context, k *accounts.APIKey) error {
	err := x.insert(ctx, `INSERT INTO api_keys (`+apiKeyCols+`)
		VALUES (:id, :owner_id, :mode, :name, :hash, :hint, :created_at, :last_used_at, :revoked_at) ON CONFLICT DO NOTHING`, k)
	if err != nil {
		return fmt.Errorf("create api key: %w", err)
	}
	return nil
}

func (x q) GetAPIKeyByHash(ctx context.Context, hash string) (*accounts.APIKey, error) {
	return cachedRead(x, x.db.caches.apiKeys, hash, func() (*accounts.APIKey, error) {
		var k accounts.APIKey
		if err := x.get(ctx, x.reader(), &k, "SELECT "+apiKeyCols+" FROM api_keys WHERE hash = ?", hash); err != nil {
			return nil, fmt.Errorf("get api key: %w", err)
		}
		return &k, nil
	})
}

// ListAPIKeys lists every key of the owner, revoked ones included, newest
// first.
func (x q) ListAPIKeys(ctx context.Context, ownerID string) ([]accounts.APIKey, error) {
	var keys []accounts.APIKey
	if err := x.sel(ctx, &keys, "SELECT "+apiKeyCols+" FROM api_keys WHERE owner_id = ? ORDER BY created_at DESC, id DESC", ownerID); err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return keys, nil
}

func (x q) RevokeAPIKey(ctx context.Context, ownerID, id string, at time.Time) error {
	var n int64
	err := x.changing(ctx, x.db.caches.apiKeys, func(x q) (err error) {
		n, err = x.exec(ctx, "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND owner_id = ? AND revoked_at IS NULL", at, id, ownerID)
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("revoke api key: %w", core.ErrNoRows)
	}
	return nil
}

func (x q) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	n, err := x.exec(ctx, "UPDATE api_keys SET last_used_at = ? WHERE id = ?", at, id)
	if err != nil {
		return fmt.Errorf("touch api key: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("touch api key: %w", core.ErrNoRows)
	}
	// A last use is not a revocation (rowcache.go).
	x.db.caches.apiKeys.update(func(k **accounts.APIKey) bool {
		if (*k).ID != id {
			return false
		}
		c := cloneAPIKey(*k)
		c.LastUsedAt = usedAt(at)
		*k = c
		return true
	})
	return nil
}

const sessionCols = "id, hash, owner_id, created_at, last_seen_at, expires_at, user_agent"

func (x q) CreateSession(ctx context.Context, s *accounts.Session) error {
	err := x.insert(ctx, `INSERT INTO sessions (`+sessionCols+`)
		VALUES (:id, :hash, :owner_id, :created_at, :last_seen_at, :expires_at, :user_agent) ON CONFLICT DO NOTHING`, s)
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

func (x q) GetSessionByHash(ctx context.Context, hash string) (*accounts.Session, error) {
	var s accounts.Session
	if err := x.get(ctx, x.reader(), &s, "SELECT "+sessionCols+" FROM sessions WHERE hash = ?", hash); err != nil {
		return nil, fmt.Errorf("get session: %w", err)
	}
	return &s, nil
}

func (x q) TouchSession(ctx context.Context, id string, at time.Time) error {
	n, err := x.exec(ctx, "UPDATE sessions SET last_seen_at = ? WHERE id = ?", at, id)
	if err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("touch session: %w", core.ErrNoRows)
	}
	return nil
}

// DeleteSession is idempotent: signing out twice is not an error.
func (x q) DeleteSession(ctx context.Context, id string) error {
	if _, err := x.exec(ctx, "DELETE FROM sessions WHERE id = ?", id); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

func (x q) DeleteOwnerSessions(ctx context.Context, ownerID string) error {
	if _, err := x.exec(ctx, "DELETE FROM sessions WHERE owner_id = ?", ownerID); err != nil {
		return fmt.Errorf("delete owner sessions: %w", err)
	}
	return nil
}
