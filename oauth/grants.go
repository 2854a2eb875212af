package oauth

import (
	"context"
	"errors"

	"github.com/faxhub/faxhub/core"
)

// ListGrants implements core.GrantDirectory.
func (s *Server) ListGrants(ctx context.Context, ownerID string) ([]core.Grant, error) {
	gs, err := s.store.ListOAuthGrants(ctx, ownerID)
	if err != nil {
		return nil, err
	}
	out := make([]core.Grant, len(gs))
	for i, g := range gs {
		name := g.ClientName
		if name == "" {
			name = g.ClientID
		}
		out[i] = core.Grant{
			ID: g.ID, OwnerID: g.OwnerID, ClientID: g.ClientID, ClientName: name, ClientURI: g.ClientURI,
			Scopes: g.Scopes, Resource: g.Resource, CreatedAt: g.CreatedAt, LastUsedAt: g.LastUsedAt,
		}
	}
	return out, nil
}

// RevokeGrant implements core.GrantDirectory: the grant and every code,
// access and refresh token of it end at once.
func (s *Server) RevokeGrant(ctx context.Context, ownerID, grantID string) error {
	err := s.store.RevokeOAuthGrant(ctx, ownerID, grantID, s.now())
	if errors.Is(err, core.ErrNoRows) {
		return core.Errorf(core.KindNotFound, core.CodeNotFound, "connected app not found")
	}
	return err
}

// PurgeExpired deletes expired token sessions and consent hand-offs; run
// it periodically (any replica).
func (s *Server) PurgeExpired(ctx context.Context) (int64, error) {
	// Refresh tokens expire after 30 days; inactive ones are kept until
	// then so that reuse is recognised.
	return s.store.DeleteExpiredOAuth(ctx, s.now())
}
