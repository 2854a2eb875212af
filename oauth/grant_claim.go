package oauth

import (
	"context"
	"net/http"
)

// claimGrant is urn:faxhub:agent-auth:grant-type:claim: an agent polls
// with its claim token until the owner decides (agents.Service.PollClaim); on
// approval it gets an access token and a new identity assertion.
type claimGrant struct{ s *Server }

func (g claimGrant) exchange(ctx context.Context, r *http.Request) (map[string]any, error) {
	t, err := g.s.svc.Agents.PollClaim(ctx, r.PostForm.Get("claim_token"), r.PostForm.Get("resource"))
	if err != nil {
		return nil, err
	}
	out := agentTokenResponse(t)
	assertion, exp, err := g.s.issueAssertion(ctx, t.Registration)
	if err != nil {
		return nil, err
	}
	out["identity_assertion"], out["assertion_expires"] = assertion, exp.Unix()
	return out, nil
}
