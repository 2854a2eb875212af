package oauth

import (
	"context"
	"errors"
	"net/http"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/web"
)

// revoke is RFC 7009 revocation for every kind of token this server issues.
// A public client may omit client_id: the token itself is the proof (and
// the spec's revoke call sends only token and token_type_hint). Unknown
// tokens answer 200, as the RFC requires.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := readForm(w, r); err != nil {
		s.writeTokenError(ctx, w, err)
		return
	}
	token := r.PostForm.Get("token")
	if token == "" {
		web.WriteOAuthError(w, http.StatusBadRequest, "invalid_request", "token is required")
		return
	}
	if agents.IsAccessToken(token) {
		if err := s.svc.Agents.RevokeAccessToken(ctx, token); err != nil {
			s.fail(ctx, w, "revoke", err)
			return
		}
		revoked(w)
		return
	}
	if _, _, basic := r.BasicAuth(); !basic && r.PostForm.Get("client_id") == "" {
		clientID, err := s.tokenClient(ctx, token)
		if err != nil {
			s.log.ErrorContext(ctx, "revoke: look up token", "err", err)
			web.WriteOAuthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "revocation is unavailable right now; retry shortly")
			return
		}
		if clientID == "" {
			revoked(w)
			return
		}
		r.PostForm.Set("client_id", clientID)
	}
	// fosite answers 200 for unknown tokens and for tokens of another
	// client (without revoking them), as RFC 7009 section 2.2 asks.
	s.provider.WriteRevocationResponse(ctx, w, s.provider.NewRevocationRequest(ctx, r))
}

func revoked(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
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
