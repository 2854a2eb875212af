package hosts

import (
	"context"
	"errors"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
)

// A device approval is a code-confirmed approval (package approvals): the
// owner types the agent's device code on the device page and grants the
// capabilities it asked for or fewer. The agent keeps its own row
// (delegated_agents: code hash, tries, expiry, status); deviceState and
// devicePort are how the mechanism reads and moves it.

// deviceRules are the device door of the mechanism, with the device_*
// codes the device page and hosts have always seen.
func deviceRules() approvals.CodeRules[Capability] {
	return approvals.CodeRules[Capability]{
		Kind: approvals.KindDevice, Format: approvals.DeviceCodes(), MaxTries: DeviceMaxTries, GrantKey: "capabilities",
		Words: approvals.CodeWords{
			Expired: CodeDeviceExpired, ExpiredMsg: "this device code expired; the host has to request a new one",
			Decided: CodeDeviceDecided, DecidedMsg: "this agent is %s already",
			WrongCode:    CodeDeviceWrongCode,
			TooManyTries: CodeDeviceTooManyTries, TooManyMsg: "too many wrong codes; the host has to request a new device code",
			NotRequested: CodeCapabilityWiden, NotRequestedMsg: "the agent did not ask for %s; capabilities can only be narrowed",
			InboxApproveMsg: "to approve an agent, open its device page (the link its host shows) and enter the code the agent gives you",
		},
		CheckGrant: func(caps []Capability) error {
			if len(caps) == 0 {
				return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "approve at least one capability, or decline the agent")
			}
			if len(caps) > 4*len(capabilityOps) {
				return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "too many capabilities")
			}
			return nil
		},
	}
}

func deviceState(a *Agent) approvals.CodeState[Capability] {
	return approvals.CodeState[Capability]{
		OwnerID: a.OwnerID, Status: string(a.Status), Pending: a.Status == AgentPending, Expired: a.Status == AgentExpired,
		ExpiresAt: a.DeviceExpires, Tries: a.DeviceTries, CodeHash: a.UserCodeHash, Requested: a.Requested, ApprovalID: a.ApprovalID,
	}
}

// devicePort moves one pending agent's row.
type devicePort struct {
	s *Service
	a *Agent
}

func (p devicePort) AddTry(ctx context.Context) (int, error) {
	tries, err := p.s.d.Store.AddDeviceTry(ctx, p.a.ID)
	if errors.Is(err, core.ErrNoRows) {
		return 0, core.Errorf(core.KindConflict, CodeDeviceDecided, "this agent was decided already")
	}
	return tries, err
}

// Record moves the agent (compare-and-set). An approval is bound to the
// code the owner entered (the hash read when it was checked): a code
// re-issued meanwhile makes it fail.
func (p devicePort) Record(ctx context.Context, approve bool, granted []Capability) error {
	codeHash := ""
	if approve {
		codeHash = p.a.UserCodeHash
	}
	err := p.s.d.Store.DecideDelegatedAgent(ctx, p.a.ID, codeHash, approve, granted, p.s.now())
	if errors.Is(err, core.ErrConflict) {
		if cur, err := p.s.d.Store.GetDelegatedAgent(ctx, p.a.ID); err == nil && cur.Status == AgentPending {
			return core.Errorf(core.KindConflict, CodeDeviceExpired, "the host asked for a new code for this agent meanwhile; open the new link it shows")
		}
		return core.Errorf(core.KindConflict, CodeDeviceDecided, "this agent was decided already")
	}
	return err
}

// InboxHandler is the approval inbox's handler of device approvals: an
// agent is approved on the device page with the code, never from the
// inbox alone; declining its inbox item rejects the agent.
func (s *Service) InboxHandler() approvals.Handler {
	return s.codes.Handler(s.RejectDeviceAgent)
}
