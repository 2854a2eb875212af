package oauth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/authstate"
)

// grantTouchEvery bounds last-used writes to one per minute per grant.
const grantTouchEvery = time.Minute

// maxFormBytes bounds token and revocation request bodies.
const maxFormBytes = 64 << 10

func (s *Server) writeAccessError(ctx context.Context, w http.ResponseWriter, ar fosite.AccessRequester, err error) {
	var rfc *fosite.RFC6749Error
	if errors.As(err, &rfc) && rfc.CodeField >= 500 {
		s.log.ErrorContext(ctx, "token", "err", err, "debug", rfc.DebugField)
	}
	s.provider.WriteAccessError(ctx, w, ar, err)
}

// token is the token endpoint: authorization_code and refresh_token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body must be an application/x-www-form-urlencoded form of at most 64 KB")
		return
	}
	// fosite answers an unknown grant type with invalid_request; RFC 6749
	// section 5.2 says unsupported_grant_type.
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "":
		writeError(w, http.StatusBadRequest, "invalid_request", "grant_type is required")
		return
	case "authorization_code", "refresh_token":
	case GrantTypeAgentClaim, GrantTypeJWTBearer:
		// Agent registration grants (agents.go), served without fosite.
		s.agentToken(w, r, gt)
		return
	default:
		writeError(w, http.StatusBadRequest, "unsupported_grant_type", "grant type "+gt+" is not supported here; use authorization_code, refresh_token, "+GrantTypeAgentClaim+" or "+GrantTypeJWTBearer)
		return
	}
	ar, err := s.provider.NewAccessRequest(ctx, r, newSession())
	if err != nil {
		s.writeAccessError(ctx, w, ar, err)
		return
	}
	// RFC 8707: a resource named at the token endpoint must be one the
	// authorization granted; the token's audience is never widened.
	if res := ar.GetRequestForm()["resource"]; len(res) > 0 {
		granted, err := s.grantedAudience(ctx, ar)
		if err != nil {
			s.writeAccessError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
			return
		}
		for _, r := range res {
			if !granted.Has(r) {
				s.writeAccessError(ctx, w, ar, errInvalidTarget("The resource was not granted by this authorization."))
				return
			}
		}
	}
	fs, _ := ar.GetSession().(*session)
	if fs == nil || fs.GrantID == "" {
		s.writeAccessError(ctx, w, ar, fosite.ErrInvalidGrant.WithHint("The authorization has no grant."))
		return
	}
	if g, err := s.store.GetOAuthGrant(ctx, fs.GrantID); err != nil || g.RevokedAt != nil {
		s.writeAccessError(ctx, w, ar, fosite.ErrInvalidGrant.WithHint("The owner revoked this app's access."))
		return
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		s.writeAccessError(ctx, w, ar, err)
		return
	}
	s.provider.WriteAccessResponse(ctx, w, ar, resp)
}

// grantedAudience is the audience the tokens of ar will carry. The refresh
// handler grants it while validating; the code handler only when issuing,
// so for a code it is read from the code's stored request.
func (s *Server) grantedAudience(ctx context.Context, ar fosite.AccessRequester) (fosite.Arguments, error) {
	if !ar.GetGrantTypes().ExactOne("authorization_code") {
		return ar.GetGrantedAudience(), nil
	}
	sig := s.tokens.AuthorizeCodeSignature(ctx, ar.GetRequestForm().Get("code"))
	req, _, err := storage{s}.get(ctx, authstate.OAuthAuthorizeCode, sig, nil)
	if err != nil {
		return nil, err
	}
	return req.GetGrantedAudience(), nil
}

// revoke is RFC 7009 revocation. A public client may omit client_id: the
// token itself is the proof (and the spec's revoke call sends only token
// and token_type_hint). Unknown tokens answer 200, as the RFC requires.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body must be an application/x-www-form-urlencoded form of at most 64 KB")
		return
	}
	token := r.PostForm.Get("token")
	if token == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "token is required")
		return
	}
	if strings.HasPrefix(token, prefixAgentAccess) {
		s.revokeAgentToken(ctx, w, token)
		return
	}
	if _, _, basic := r.BasicAuth(); !basic && r.PostForm.Get("client_id") == "" {
		clientID, err := s.tokenClient(ctx, token)
		if err != nil {
			s.log.ErrorContext(ctx, "revoke: look up token", "err", err)
			writeError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "revocation is unavailable right now; retry shortly")
			return
		}
		if clientID == "" {
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			return
		}
		r.PostForm.Set("client_id", clientID)
	}
	// fosite answers 200 for unknown tokens and for tokens of another
	// client (without revoking them), as RFC 7009 section 2.2 asks.
	s.provider.WriteRevocationResponse(ctx, w, s.provider.NewRevocationRequest(ctx, r))
}

// tokenClient returns the client a token was issued to, or "" if the token
// is unknown.
func (s *Server) tokenClient(ctx context.Context, token string) (string, error) {
	h := s.tokens
	for _, k := range []struct {
		kind authstate.OAuthTokenKind
		sig  string
	}{{authstate.OAuthAccessToken, h.AccessTokenSignature(ctx, token)}, {authstate.OAuthRefreshToken, h.RefreshTokenSignature(ctx, token)}} {
		t, err := s.store.GetOAuthToken(ctx, k.kind, hashKey(k.sig))
		if errors.Is(err, core.ErrNoRows) {
			continue
		} else if err != nil {
			return "", err
		}
		return t.ClientID, nil
	}
	return "", nil
}

func invalidToken(msg string) error {
	return core.Errorf(core.KindUnauthenticated, core.CodeInvalidToken, "%s", msg)
}

// VerifyAccessToken implements core.TokenVerifier. Chat-app tokens act in
// live mode: a chat app is the owner's real assistant, and test mode is
// for API-key integrations (docs/oauth.md).
func (s *Server) VerifyAccessToken(ctx context.Context, token, audience string) (core.Principal, error) {
	if token == "" {
		return core.Principal{}, invalidToken("an access token is required")
	}
	if strings.HasPrefix(token, prefixAgentAccess) {
		return s.verifyAgentToken(ctx, token, audience)
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
	if audience == "" || !ar.GetGrantedAudience().Has(audience) {
		return core.Principal{}, invalidToken("the access token was issued for another resource")
	}
	g, err := s.store.GetOAuthGrant(ctx, fs.GrantID)
	if errors.Is(err, core.ErrNoRows) {
		return core.Principal{}, invalidToken("the access token is not valid")
	} else if err != nil {
		return core.Principal{}, err
	}
	if g.RevokedAt != nil {
		return core.Principal{}, invalidToken("the owner revoked this app's access")
	}
	// The token's scopes, within what the grant allows now: a later
	// consent that narrowed the grant narrows older tokens too.
	var scopes []core.Scope
	for _, sc := range core.FaxScopes {
		if ar.GetGrantedScopes().Has(string(sc)) && slices.Contains(g.Scopes, string(sc)) {
			scopes = append(scopes, sc)
		}
	}
	now := s.now()
	if g.LastUsedAt == nil || now.Sub(*g.LastUsedAt) > grantTouchEvery {
		if err := s.store.TouchOAuthGrant(ctx, g.ID, now); err != nil {
			s.log.WarnContext(ctx, "touch oauth grant", "grant_id", g.ID, "err", err)
		}
	}
	return core.Principal{
		OwnerID: g.OwnerID, Kind: core.PrincipalOAuthGrant, Mode: core.ModeLive, Scopes: scopes,
		SubjectID: g.ID, ClientID: g.ClientID, Audience: audience,
	}, nil
}

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
	n, err := s.store.DeleteExpiredOAuth(ctx, s.now())
	if err != nil {
		return n, err
	}
	if a := s.agentStore(); a != nil {
		m, err := a.DeleteExpiredAgentTokens(ctx, s.now())
		return n + m, err
	}
	return n, nil
}
