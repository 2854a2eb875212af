package oauth

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/ory/fosite"

	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/authstate"
)

// fositeGrant serves authorization_code and refresh_token through fosite,
// which authenticates the client and checks PKCE, codes and refresh
// rotation.
type fositeGrant struct{ s *Server }

func asFosite(err error, target **fosite.RFC6749Error) bool { return errors.As(err, target) }

func (g fositeGrant) exchange(ctx context.Context, r *http.Request) (map[string]any, error) {
	s := g.s
	if err := s.resolveClient(ctx, r.PostForm.Get("client_id")); err != nil {
		return nil, err
	}
	ar, err := s.provider.NewAccessRequest(ctx, r, newSession())
	if err != nil {
		return nil, err
	}
	// RFC 8707: a resource named at the token endpoint must be one the
	// authorization granted; the token's audience is never widened.
	if res := ar.GetRequestForm()["resource"]; len(res) > 0 {
		granted, err := s.grantedAudience(ctx, ar)
		if err != nil {
			return nil, fosite.ErrServerError.WithWrap(err)
		}
		for _, r := range res {
			if !granted.Has(r) {
				return nil, errInvalidTarget("The resource was not granted by this authorization.")
			}
		}
	}
	fs, _ := ar.GetSession().(*session)
	if fs == nil || fs.GrantID == "" {
		return nil, fosite.ErrInvalidGrant.WithHint("The authorization has no grant.")
	}
	if gr, err := s.store.GetOAuthGrant(ctx, fs.GrantID); err != nil || gr.RevokedAt != nil {
		return nil, fosite.ErrInvalidGrant.WithHint("The owner revoked this app's access.")
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		return nil, err
	}
	return resp.ToMap(), nil
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

// agentTokenResponse is the token response of the agent grants.
func agentTokenResponse(t *agents.Tokens) map[string]any {
	return map[string]any{"access_token": t.AccessToken, "token_type": "Bearer", "expires_in": int(t.ExpiresIn.Seconds()), "scope": strings.Join(t.Scopes, " ")}
}
