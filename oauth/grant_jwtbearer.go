package oauth

import (
	"context"
	"net/http"
)

// jwtBearerGrant is urn:ietf:params:oauth:grant-type:jwt-bearer (RFC 7523)
// for our own identity assertions: the signature and claims are checked
// here (assertion.go), whether the assertion is still current in core.
type jwtBearerGrant struct{ s *Server }

func (g jwtBearerGrant) exchange(ctx context.Context, r *http.Request) (map[string]any, error) {
	a, err := g.s.verifyAssertion(ctx, r.PostForm.Get("assertion"))
	if err != nil {
		return nil, err
	}
	t, err := g.s.svc.Agents.ExchangeAssertion(ctx, a.registrationID, a.jti, r.PostForm.Get("resource"))
	if err != nil {
		return nil, err
	}
	return agentTokenResponse(t), nil
}
