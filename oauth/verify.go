package oauth

import (
	"context"
	"errors"
	"time"

	"github.com/ory/fosite"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
)

// grantTouchEvery bounds last-used writes to one per minute per grant.
const grantTouchEvery = time.Minute

func invalidToken(msg string) error {
	return core.Errorf(core.KindUnauthenticated, core.CodeInvalidToken, "%s", msg)
}

// VerifyAccessToken implements core.TokenVerifier: the one path by which a
// bearer token presented to a resource becomes a Principal. Agent access
// tokens are core's (agents.Service.TokenPrincipal); chat-app tokens are
// fosite's, and core builds their principal (core.Kernel.GrantPrincipal),
// deciding its mode there.
func (s *Server) VerifyAccessToken(ctx context.Context, token, audience string) (core.Principal, error) {
	if token == "" {
		return core.Principal{}, invalidToken("an access token is required")
	}
	if agents.IsAccessToken(token) {
		return s.svc.Agents.TokenPrincipal(ctx, token, audience)
	}
	_, ar, err := s.provider.IntrospectToken(ctx, token, fosite.AccessToken, newSession())
	if err != nil {
		var rfc *fosite.RFC6749Error
		if errors.As(err, &rfc) && rfc.CodeField >= 500 {
			return core.Principal{}, err
		}
		return core.Principal{}, invalidToken("the access token is not valid, has expired or was revoked")
	}
	fs, _ := ar.GetSession().(*session)
	if fs == nil || fs.GrantID == "" {
		return core.Principal{}, invalidToken("the access token is not valid")
	}
	// fosite checks expiry against the wall clock; faxhub's clock (the
	// one tests inject, the one every other expiry here uses) decides too.
	if exp := ar.GetSession().GetExpiresAt(fosite.AccessToken); !exp.IsZero() && !s.now().Before(exp) {
		return core.Principal{}, invalidToken("the access token is not valid, has expired or was revoked")
	}
	if audience == "" || !ar.GetGrantedAudience().Has(audience) {
		return core.Principal{}, invalidToken("the access token was issued for another resource")
	}
	// The grant was read with the token (storage.get); read it here only
	// if it was not.
	g := fs.grant
	if g == nil || g.ID != fs.GrantID {
		var err error
		g, err = s.store.GetOAuthGrant(ctx, fs.GrantID)
		if errors.Is(err, core.ErrNoRows) {
			return core.Principal{}, invalidToken("the access token is not valid")
		} else if err != nil {
			return core.Principal{}, err
		}
	}
	if g.RevokedAt != nil {
		return core.Principal{}, invalidToken("the owner revoked this app's access")
	}
	// The token's scopes, within what the grant allows now (core's rule).
	scopes := core.GrantScopes(ar.GetGrantedScopes(), g.Scopes)
	now := s.now()
	if g.LastUsedAt == nil || now.Sub(*g.LastUsedAt) > grantTouchEvery {
		if err := s.store.TouchOAuthGrant(ctx, g.ID, now); err != nil {
			s.log.WarnContext(ctx, "touch oauth grant", "grant_id", g.ID, "err", err)
		}
	}
	return s.svc.Kernel.GrantPrincipal(core.GrantAccess{OwnerID: g.OwnerID, GrantID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, Audience: audience, Scopes: scopes}), nil
}
