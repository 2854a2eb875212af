package accounts

import (
	"context"
	"time"
)

// Queries keeps owners, their API keys and their sessions.
type Queries interface {
	CreateOwner(ctx context.Context, o *Owner) error
	GetOwner(ctx context.Context, id string) (*Owner, error)
	GetOwnerByEmail(ctx context.Context, email string) (*Owner, error)

	CreateAPIKey(ctx context.Context, k *APIKey) error
	GetAPIKeyByHash(ctx context.Context, hash string) (*APIKey, error)
	ListAPIKeys(ctx context.Context, ownerID string) ([]APIKey, error)
	// RevokeAPIKey sets revoked_at once; ErrNoRows if the owner has no such
	// live key.
	RevokeAPIKey(ctx context.Context, ownerID, id string, at time.Time) error
	TouchAPIKey(ctx context.Context, id string, at time.Time) error

	CreateSession(ctx context.Context, s *Session) error
	GetSessionByHash(ctx context.Context, hash string) (*Session, error)
	TouchSession(ctx context.Context, id string, at time.Time) error
	DeleteSession(ctx context.Context, id string) error
	DeleteOwnerSessions(ctx context.Context, ownerID string) error
}
