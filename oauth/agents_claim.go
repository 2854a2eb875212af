package oauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"slices"

	"github.com/faxhub/faxhub/core"
)

var _ core.AgentDirectory = (*Server)(nil)

// ownClaim finds the pending claim behind a claim link and checks that the
// signed-in owner is its enrolling account.
func (s *Server) ownClaim(ctx context.Context, ownerID, attemptToken string) (*core.AgentClaim, error) {
	a := s.agentStore()
	if a == nil || attemptToken == "" {
		return nil, core.Errorf(core.KindNotFound, core.CodeClaimLinkInvalid, "this claim link is not valid")
	}
	c, err := a.GetAgentClaimByAttempt(ctx, hashKey(attemptToken))
	if errors.Is(err, core.ErrNoRows) {
		return nil, core.Errorf(core.KindNotFound, core.CodeClaimLinkInvalid,
			"this claim link is no longer valid: the agent started a newer attempt, or the claim was decided already")
	} else if err != nil {
		return nil, err
	}
	if c.OwnerID != ownerID {
		return nil, core.Errorf(core.KindForbidden, core.CodeClaimWrongOwner,
			"this agent was enrolled by another account; sign in with the account that created the enrollment token")
	}
	if o, err := s.svc.Store.GetOwner(ctx, ownerID); err != nil {
		return nil, err
	} else if o.EmailVerifiedAt == nil {
		return nil, core.Errorf(core.KindForbidden, core.CodeClaimWrongOwner, "verify your email address before approving agents")
	}
	if c.Status == core.AgentClaimExpired || (c.Status == core.AgentClaimPending && !s.now().Before(c.ExpiresAt)) {
		return nil, core.Errorf(core.KindConflict, core.CodeClaimExpired, "this claim expired; the agent has to register again with a new enrollment token")
	}
	if c.Status != core.AgentClaimPending {
		return nil, core.Errorf(core.KindConflict, core.CodeClaimDecided, "this claim was %s already", c.Status)
	}
	return c, nil
}

// AgentClaim implements core.AgentDirectory.
func (s *Server) AgentClaim(ctx context.Context, ownerID, attemptToken string) (*core.AgentClaimView, error) {
	c, err := s.ownClaim(ctx, ownerID, attemptToken)
	if err != nil {
		return nil, err
	}
	reg, err := s.agentStore().GetAgentRegistration(ctx, c.RegistrationID)
	if err != nil {
		return nil, err
	}
	return &core.AgentClaimView{RegistrationID: reg.ID, Name: reg.Name, Type: reg.Type, Scopes: c.Scopes,
		ExpiresAt: c.ExpiresAt, TriesLeft: max(core.AgentClaimMaxTries-c.Tries, 0)}, nil
}

// DecideAgentClaim implements core.AgentDirectory.
func (s *Server) DecideAgentClaim(ctx context.Context, ownerID, attemptToken, userCode string, approve bool, scopes []string) error {
	c, err := s.ownClaim(ctx, ownerID, attemptToken)
	if err != nil {
		return err
	}
	a := s.agentStore()
	if approve {
		if c.Tries >= core.AgentClaimMaxTries {
			return core.Errorf(core.KindForbidden, core.CodeClaimTooManyTries, "too many wrong codes; the agent has to start a new claim attempt")
		}
		if subtle.ConstantTimeCompare([]byte(hashKey(userCode)), []byte(c.UserCodeHash)) != 1 {
			tries, err := a.AddAgentClaimTry(ctx, hashKey(attemptToken))
			if err != nil {
				return err
			}
			if tries >= core.AgentClaimMaxTries {
				return core.Errorf(core.KindForbidden, core.CodeClaimTooManyTries, "too many wrong codes; the agent has to start a new claim attempt")
			}
			return core.Errorf(core.KindInvalid, core.CodeClaimWrongCode, "the code does not match; %d tries left", core.AgentClaimMaxTries-tries)
		}
		if scopes == nil {
			scopes = c.Scopes
		}
		for _, sc := range scopes {
			if !slices.Contains(c.Scopes, sc) {
				return core.Errorf(core.KindForbidden, core.CodeClaimScopeWiden, "the scope %s was not permitted by the enrollment; scopes can only be narrowed", sc)
			}
		}
		scopes = slices.Compact(slices.Sorted(slices.Values(scopes)))
	} else {
		scopes = c.Scopes
	}
	if err := a.DecideAgentClaim(ctx, c.RegistrationID, approve, scopes, s.now()); errors.Is(err, core.ErrConflict) {
		return core.Errorf(core.KindConflict, core.CodeClaimDecided, "this claim was decided already or expired")
	} else if err != nil {
		return err
	}
	// The inbox item follows the decision.
	if c.ApprovalID != "" {
		if _, err := s.svc.DecideApproval(ctx, ownerID, c.ApprovalID, core.Decision{Approve: approve,
			BindingHash: core.BindingHash(c.RegistrationID), Data: map[string]any{"scopes": scopes}}); err != nil {
			s.log.WarnContext(ctx, "agent claim: decide inbox approval", "approval_id", c.ApprovalID, "err", err)
		}
	}
	return nil
}

// DeclineAgentClaim implements core.AgentDirectory.
func (s *Server) DeclineAgentClaim(ctx context.Context, ownerID, registrationID string) error {
	a := s.agentStore()
	if a == nil {
		return nil
	}
	reg, err := a.GetAgentRegistration(ctx, registrationID)
	if errors.Is(err, core.ErrNoRows) || (err == nil && reg.OwnerID != ownerID) {
		return nil
	} else if err != nil {
		return err
	}
	if err := a.DecideAgentClaim(ctx, registrationID, false, reg.Scopes, s.now()); err != nil && !errors.Is(err, core.ErrConflict) && !errors.Is(err, core.ErrNoRows) {
		return err
	}
	return nil
}
