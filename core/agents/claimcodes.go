package agents

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
)

// An agent claim is a code-confirmed approval (package approvals): the
// owner types the six-digit code at the claim link and grants the
// enrollment's scopes or fewer. The claim keeps its own row (agent_claims:
// code hash, tries, expiry, status); claimState and claimPort are how the
// mechanism reads and moves it.

// claimRules are the claim door of the mechanism, with the claim_* codes
// the claim page has always answered.
func claimRules() approvals.CodeRules[string] {
	return approvals.CodeRules[string]{
		Kind: approvals.KindAgentClaim, Format: approvals.SixDigitCodes(), MaxTries: ClaimMaxTries, GrantKey: "scopes",
		Words: approvals.CodeWords{
			Expired: CodeClaimExpired, ExpiredMsg: "this claim expired; the agent has to register again with a new enrollment token",
			Decided: CodeClaimDecided, DecidedMsg: "this claim was %s already",
			WrongCode:    CodeClaimWrongCode,
			TooManyTries: CodeClaimTooManyTries, TooManyMsg: "too many wrong codes; the agent has to start a new claim attempt",
			NotRequested: CodeClaimScopeWiden, NotRequestedMsg: "the scope %s was not permitted by the enrollment; scopes can only be narrowed",
			InboxApproveMsg: "to approve an agent, open the link the agent gave you and enter its six-digit code",
		},
	}
}

func claimState(c *Claim) approvals.CodeState[string] {
	return approvals.CodeState[string]{
		OwnerID: c.OwnerID, Status: c.Status, Pending: c.Status == ClaimPending, Expired: c.Status == ClaimExpired,
		ExpiresAt: c.ExpiresAt, Tries: c.Tries, CodeHash: c.UserCodeHash, Requested: c.Scopes, ApprovalID: c.ApprovalID,
	}
}

// claimPort moves one claim attempt's row.
type claimPort struct {
	s            *Service
	c            *Claim
	attemptToken string
}

func (p claimPort) AddTry(ctx context.Context) (int, error) {
	return p.s.d.Store.AddAgentClaimTry(ctx, core.HashSecret(p.attemptToken))
}

func (p claimPort) Record(ctx context.Context, approve bool, granted []string) error {
	scopes := granted
	if !approve {
		scopes = p.c.Scopes // a declined claim keeps what was asked
	}
	err := p.s.d.Store.DecideAgentClaim(ctx, p.c.RegistrationID, approve, scopes, p.s.now())
	if errors.Is(err, core.ErrConflict) {
		return core.Errorf(core.KindConflict, CodeClaimDecided, "this claim was decided already or expired")
	}
	return err
}

// InboxHandler is the approval inbox's handler of agent claims: a claim
// is approved at its link with the code, never from the inbox alone;
// declining its inbox item declines the claim.
func (s *Service) InboxHandler() approvals.Handler {
	return s.codes.Handler(func(ctx context.Context, a *approvals.Approval) error {
		var d AgentClaimDetails
		if json.Unmarshal(a.Details, &d) != nil || d.RegistrationID == "" {
			return nil
		}
		return s.DeclineClaim(ctx, a.OwnerID, d.RegistrationID)
	})
}
