package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/events"
)

// effectiveStatus is the agent's status as callers see it: a pending agent
// whose device code has lapsed reads as expired until re-issued.
func (a *Agent) effectiveStatus(now time.Time) AgentStatus {
	if a.Status == AgentPending && !now.Before(a.DeviceExpires) {
		return AgentExpired
	}
	return a.Status
}

// DeviceApprovalDetails is what a device_authorization approval shows in
// the inbox (Approval.Details).
type DeviceApprovalDetails struct {
	HostID          string       `json:"hostId"`
	HostName        string       `json:"hostName"`
	AgentID         string       `json:"agentId"`
	AgentName       string       `json:"agentName"`
	Capabilities    []Capability `json:"capabilities"`
	VerificationURI string       `json:"verificationUri"`
}

func (s *Service) verificationURI() string { return s.kernel.URL(core.LinkDevicePage, nil) }

// newDeviceCode writes a new pending approval for a through q and returns
// the code, its hash and the approval; the caller stores them on the agent.
func (s *Service) newDeviceCode(ctx context.Context, q Tx, host *Host, a *Agent) (string, string, *approvals.Approval, error) {
	return s.codes.Start(ctx, q, approvals.Request{
		OwnerID: a.OwnerID, Requester: a.Name + " on " + host.Name,
		Summary: "Agent " + a.Name + " on " + host.Name + " asks for: " + joinCapabilities(a.Requested),
		Details: DeviceApprovalDetails{HostID: host.ID, HostName: host.Name, AgentID: a.ID, AgentName: a.Name,
			Capabilities: a.Requested, VerificationURI: s.verificationURI() + "?agent_id=" + url.QueryEscape(a.ID)},
		Binding: a.ID, TTL: DeviceApprovalTTL,
	})
}

func (s *Service) deviceApproval(a *Agent, code string) *DeviceApproval {
	v := url.Values{"agent_id": {a.ID}, "code": {code}}
	return &DeviceApproval{
		Method: "device_authorization", VerificationURI: s.verificationURI(),
		VerificationURIComplete: s.verificationURI() + "?" + v.Encode(),
		UserCode:                code, ExpiresIn: max(int(a.DeviceExpires.Sub(s.now())/time.Second), 0), Interval: DeviceInterval,
	}
}

func joinCapabilities(cs []Capability) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = string(c)
	}
	return strings.Join(parts, ", ")
}

// RegisterAgent registers an agent for a verified host. The
// agent's key must not be the host's (nor any other host's or agent's). A
// retry by the same host with the same agent key while the agent is pending
// answers the same agent (idempotent); otherwise a known key is
// CodeAgentExists. Requested capabilities that the host's default
// capabilities cover are granted at once unless ForceApproval; anything
// else waits for the owner's device approval (pending, with a
// DeviceApproval).
//
// A pending retry cannot repeat the user code (only its hash is stored):
// it re-issues a fresh code and retires the old one, answering the same
// agent_id, exactly as POST …/agent/device/code would.
func (s *Service) RegisterAgent(ctx context.Context, host *Host, r AgentRequest) (*AgentView, error) {
	if host == nil || host.Status != Active || host.Thumbprint == nil {
		return nil, invalidJWT("the host is not active")
	}
	if r.Mode != "delegated" {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "mode must be \"delegated\"; autonomous agents are not offered here: every agent acts for its owner")
	}
	if r.PreferredMethod != "" && r.PreferredMethod != "device_authorization" {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "preferred_method must be \"device_authorization\", the only approval method offered")
	}
	name := strings.TrimSpace(r.Name)
	if name == "" || len([]rune(name)) > agents.AgentNameMax {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the agent name is required (at most %d characters)", agents.AgentNameMax)
	}
	if len(r.Capabilities) == 0 {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "capabilities must name at least one capability: %v", Capabilities())
	}
	if len(r.Capabilities) > 4*len(capabilityOps) {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "too many capabilities")
	}
	caps, err := normalizeCapabilities(r.Capabilities)
	if err != nil {
		return nil, err
	}
	if r.AgentKey.Thumbprint == "" || r.AgentKey.JSON == "" {
		return nil, core.Errorf(core.KindInvalid, CodeInvalidPublicKey, "agent_public_key is required")
	}
	if r.AgentKey.Thumbprint == *host.Thumbprint {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the agent key must not be the host's key: give each agent a key pair of its own")
	}
	if _, err := s.d.Store.GetHostByThumbprint(ctx, r.AgentKey.Thumbprint); err == nil {
		return nil, errKeyInUse
	} else if !errors.Is(err, core.ErrNoRows) {
		return nil, fmt.Errorf("register agent: %w", err)
	}
	if old, err := s.d.Store.GetDelegatedAgentByThumbprint(ctx, r.AgentKey.Thumbprint); err == nil {
		return s.retryRegistration(ctx, host, old)
	} else if !errors.Is(err, core.ErrNoRows) {
		return nil, fmt.Errorf("register agent: %w", err)
	}

	now := s.now()
	a := &Agent{ID: core.NewID(core.PrefixDelegatedAgent), HostID: host.ID, OwnerID: host.OwnerID, Name: name,
		PublicKey: r.AgentKey.JSON, Thumbprint: r.AgentKey.Thumbprint, Requested: caps, Granted: []Capability{},
		Status: AgentPending, DeviceExpires: now.Add(DeviceApprovalTTL), CreatedAt: now}
	preApproved := !r.ForceApproval
	for _, c := range caps {
		if !slices.Contains(host.DefaultCapabilities, c) {
			preApproved = false
		}
	}
	var code string
	if preApproved {
		// The host's owner granted these in advance. send_fax among them
		// still sends nothing without the owner's passkey per fax.
		a.Status, a.Granted, a.ActivatedAt, a.DeviceExpires = AgentActive, caps, &now, now
	}
	err = s.inTx(ctx, func(tx Tx) error {
		if !preApproved {
			var appr *approvals.Approval
			var err error
			if code, a.UserCodeHash, appr, err = s.newDeviceCode(ctx, tx, host, a); err != nil {
				return err
			}
			a.ApprovalID = appr.ID
		}
		if err := tx.CreateDelegatedAgent(ctx, a, MaxAgentsPerHost); err != nil {
			return err
		}
		return agents.AppendEvent(ctx, tx, a.OwnerID, s.cfg.AgentMode, events.AgentRegistered, agentEvent(a, host.Name, ""), now)
	})
	switch {
	case errors.Is(err, core.ErrConflict):
		return nil, core.Errorf(core.KindConflict, CodeTooManyAgents, "this host has %d pending or active agents already; revoke one first", MaxAgentsPerHost)
	case errors.Is(err, core.ErrExists):
		// A concurrent registration with the same key won.
		if old, gerr := s.d.Store.GetDelegatedAgentByThumbprint(ctx, r.AgentKey.Thumbprint); gerr == nil {
			return s.retryRegistration(ctx, host, old)
		}
		return nil, core.Errorf(core.KindConflict, CodeAgentExists, "an agent with this key is registered already")
	case err != nil:
		return nil, fmt.Errorf("register agent: %w", err)
	}
	v := &AgentView{Agent: a}
	if !preApproved {
		v.Approval = s.deviceApproval(a, code)
	}
	return v, nil
}

// retryRegistration answers a registration with a key that is an agent's
// already: the same host's pending agent gets a fresh code (idempotent
// retry), anything else is CodeAgentExists.
func (s *Service) retryRegistration(ctx context.Context, host *Host, old *Agent) (*AgentView, error) {
	if old.HostID != host.ID || old.Status != AgentPending {
		return nil, core.Errorf(core.KindConflict, CodeAgentExists, "an agent with this key is registered already; use a new key pair for a new agent")
	}
	return s.reissue(ctx, host, old)
}

// reissue gives a pending agent a new code and inbox approval, and retires
// the old approval, in one transaction.
func (s *Service) reissue(ctx context.Context, host *Host, a *Agent) (*AgentView, error) {
	now := s.now()
	oldApproval := a.ApprovalID
	var code string
	err := s.inTx(ctx, func(tx Tx) error {
		a.DeviceExpires, a.DeviceTries = now.Add(DeviceApprovalTTL), 0
		var appr *approvals.Approval
		var err error
		if code, a.UserCodeHash, appr, err = s.newDeviceCode(ctx, tx, host, a); err != nil {
			return err
		}
		a.ApprovalID = appr.ID
		if err := tx.ReissueDevice(ctx, a.ID, a.UserCodeHash, a.ApprovalID, a.DeviceExpires); err != nil {
			return err
		}
		return s.codes.Retire(ctx, tx, a.OwnerID, oldApproval)
	})
	if errors.Is(err, core.ErrConflict) {
		return nil, notPendingError(a.ID)
	} else if err != nil {
		return nil, fmt.Errorf("reissue device code: %w", err)
	}
	return &AgentView{Agent: a, Approval: s.deviceApproval(a, code)}, nil
}

func notPendingError(agentID string) error {
	return core.Errorf(core.KindConflict, CodeDeviceDecided, "agent %s is no longer pending: only a pending agent gets a device code", agentID)
}

func agentNotFound() error {
	return core.Errorf(core.KindNotFound, CodeAgentNotFound, "no agent with that id")
}

// hostAgent reads agentID if it is host's.
func (s *Service) hostAgent(ctx context.Context, host *Host, agentID string) (*Agent, error) {
	if host == nil || !core.HasPrefix(agentID, core.PrefixDelegatedAgent) || len(agentID) > 100 {
		return nil, agentNotFound()
	}
	a, err := s.d.Store.GetDelegatedAgent(ctx, agentID)
	if errors.Is(err, core.ErrNoRows) || (err == nil && a.HostID != host.ID) {
		return nil, agentNotFound()
	} else if err != nil {
		return nil, fmt.Errorf("read agent: %w", err)
	}
	return a, nil
}

// GetAgent reads one of host's agents (CodeAgentNotFound for
// an agent of another host, exactly as for an unknown id).
func (s *Service) GetAgent(ctx context.Context, host *Host, agentID string) (*Agent, error) {
	a, err := s.hostAgent(ctx, host, agentID)
	if err != nil {
		return nil, err
	}
	a.Status = a.effectiveStatus(s.now())
	return a, nil
}

// ReissueDeviceCode issues a new device code for one of host's pending
// (or expired-pending) agents; the old code and its inbox approval stop
// working. It never registers anything: an unknown agent is
// CodeAgentNotFound, an active/rejected/revoked one a conflict.
func (s *Service) ReissueDeviceCode(ctx context.Context, host *Host, agentID string) (*AgentView, error) {
	a, err := s.hostAgent(ctx, host, agentID)
	if err != nil {
		return nil, err
	}
	if a.Status != AgentPending {
		return nil, notPendingError(a.ID)
	}
	return s.reissue(ctx, host, a)
}

// RevokeAgent revokes an agent, by its host (hostID set) or by
// its owner (ownerID set, the console or the owner's session). Revoking a
// revoked agent answers it again.
func (s *Service) RevokeAgent(ctx context.Context, ownerID, hostID, agentID string) (*Agent, error) {
	if (ownerID == "" && hostID == "") || !core.HasPrefix(agentID, core.PrefixDelegatedAgent) || len(agentID) > 100 {
		return nil, agentNotFound()
	}
	a, err := s.d.Store.GetDelegatedAgent(ctx, agentID)
	if errors.Is(err, core.ErrNoRows) || (err == nil && ((ownerID != "" && a.OwnerID != ownerID) || (hostID != "" && a.HostID != hostID))) {
		return nil, agentNotFound()
	} else if err != nil {
		return nil, fmt.Errorf("revoke agent: %w", err)
	}
	by := agents.RevokedByHost
	if ownerID != "" {
		by = agents.RevokedByOwner
	}
	if err := s.revokeAgent(ctx, a, by); err != nil && !errors.Is(err, core.ErrConflict) {
		return nil, fmt.Errorf("revoke agent: %w", err)
	}
	if a.Status == AgentPending {
		// Its device approval leaves the inbox.
		if err := s.codes.Retire(ctx, nil, a.OwnerID, a.ApprovalID); err != nil {
			s.d.Logger.WarnContext(ctx, "revoke agent: retire device approval", "approval_id", a.ApprovalID, "err", err)
		}
	}
	if a, err = s.d.Store.GetDelegatedAgent(ctx, a.ID); err != nil {
		return nil, fmt.Errorf("revoke agent: %w", err)
	}
	return a, nil
}

// DelegatedAgentForJWT is the agent an agent JWT (iss = host, sub = agent)
// names, checked for use: host active, agent of that host, agent active.
// Otherwise CodeInvalidJWT (unknown), CodeHostRevoked, CodeAgentPending,
// CodeAgentRejected, CodeAgentExpired or CodeAgentRevoked.
func (s *Service) DelegatedAgentForJWT(ctx context.Context, host *Host, agentID string) (*Agent, error) {
	if host == nil {
		return nil, invalidJWT("iss names no registered host")
	}
	if err := hostUsable(host); err != nil {
		return nil, err
	}
	a, err := s.hostAgent(ctx, host, agentID)
	if core.ErrorKind(err) == core.KindNotFound {
		return nil, invalidJWT("sub names no agent of this host")
	} else if err != nil {
		return nil, err
	}
	if err := agentUsable(a, s.now()); err != nil {
		return nil, err
	}
	return a, nil
}

// AgentForJWT is DelegatedAgentForJWT from the claims alone, in one read:
// the agent sub names and its host, which iss must name (by id or key
// thumbprint). It is what the verifier of agent JWTs uses; the signature
// is checked by the caller with the agent's key.
func (s *Service) AgentForJWT(ctx context.Context, iss, sub string) (*Host, *Agent, error) {
	if !WellFormedIssuer(iss) {
		return nil, nil, invalidJWT("iss must name a registered host (its host id or its key's thumbprint)")
	}
	if !WellFormedAgentID(sub) {
		return nil, nil, invalidJWT("sub names no agent of this host")
	}
	a, h, err := s.d.Store.GetDelegatedAgentWithHost(ctx, sub)
	if errors.Is(err, core.ErrNoRows) {
		return nil, nil, invalidJWT("sub names no agent of this host")
	} else if err != nil {
		return nil, nil, fmt.Errorf("read agent: %w", err)
	}
	if iss != h.ID && (h.Thumbprint == nil || iss != *h.Thumbprint) {
		return nil, nil, invalidJWT("sub names no agent of this host")
	}
	if err := hostUsable(h); err != nil {
		return nil, nil, err
	}
	if err := agentUsable(a, s.now()); err != nil {
		return nil, nil, err
	}
	return h, a, nil
}

// hostUsable refuses a revoked host and one without a key.
func hostUsable(h *Host) error {
	switch {
	case h.Status == Revoked:
		return core.Errorf(core.KindForbidden, CodeHostRevoked, "this host was revoked by its owner")
	case h.Status != Active || h.PublicKey == nil:
		return invalidJWT("this host has not enrolled a key yet")
	}
	return nil
}

// agentUsable refuses an agent that may not act (yet, or any more).
func agentUsable(a *Agent, now time.Time) error {
	switch a.effectiveStatus(now) {
	case AgentActive:
		return nil
	case AgentPending:
		return core.Errorf(core.KindForbidden, CodeAgentPending, "the owner has not approved this agent yet")
	case AgentExpired:
		return core.Errorf(core.KindForbidden, CodeAgentExpired, "the device code expired before the owner approved; the host can request a new one")
	case AgentRejected:
		return core.Errorf(core.KindForbidden, CodeAgentRejected, "the owner declined this agent")
	}
	return core.Errorf(core.KindForbidden, CodeAgentRevoked, "this agent was revoked")
}

// Principal is the Principal of an active agent presenting an agent JWT:
// the owner's, in Config.AgentMode, restricted to the capabilities the
// agent was granted and, when the JWT has a capabilities claim
// (jwtCapabilities not nil), to those it names as well (protocol §4.3: a
// claim narrows, it never adds one not granted; unknown names add
// nothing). The restriction is the principal's, so core.Authorize alone
// decides: its scopes are those of the capabilities left and its
// Operations exactly what they perform, and an adapter filters nothing.
func (s *Service) Principal(host *Host, a *Agent, jwtCapabilities []string) core.Principal {
	caps := a.Granted
	if jwtCapabilities != nil {
		caps = core.KeptScopes(a.Granted, toCapabilities(jwtCapabilities))
	}
	scopes, ops := []core.Scope{}, []core.Operation{}
	for _, c := range caps {
		for _, op := range capabilityUses(c) {
			if sc := core.ScopeFor(op); sc != "" && !slices.Contains(scopes, sc) {
				scopes = append(scopes, sc)
			}
			if !slices.Contains(ops, op) {
				ops = append(ops, op)
			}
		}
	}
	p := s.kernel.NewPrincipal(core.PrincipalDelegated, a.OwnerID, scopes, a.ID, a.ID, s.cfg.APIURL, "")
	p.Operations = ops
	hostName := ""
	if host != nil {
		hostName = host.Name
	}
	p.ClientName = a.Name + " on " + hostName
	return p
}

func toCapabilities(names []string) []Capability {
	out := make([]Capability, len(names))
	for i, n := range names {
		out[i] = Capability(n)
	}
	return out
}

// capabilityUses are the core operations a capability performs: its own
// (capabilityOps), and what serving it reads on the way. validate_fax
// prices an uploaded document's pages, so it reads the document.
func capabilityUses(c Capability) []core.Operation {
	op, ok := capabilityOps[c]
	if !ok {
		return nil
	}
	if c == CapValidateFax {
		return []core.Operation{op, core.OpGetDocument}
	}
	return []core.Operation{op}
}

// AuthorizeCapability checks that c is known (CodeUnknownCapability,
// KindInvalid) and that the agent was granted it (CodeCapabilityNotGranted,
// KindForbidden), then the one check, core.Authorize, whose refusal (the
// agent JWT's capabilities claim left c out) is reported as
// CodeCapabilityNotGranted too: that is the delegated protocol's word.
func AuthorizeCapability(p core.Principal, a *Agent, c Capability) error {
	op, ok := capabilityOps[c]
	if !ok {
		return core.Errorf(core.KindInvalid, CodeUnknownCapability, "unknown capability %q", core.CutUTF8(string(c), 64))
	}
	if a == nil || !slices.Contains(a.Granted, c) {
		return core.Errorf(core.KindForbidden, CodeCapabilityNotGranted, "the owner has not granted this agent %s", c)
	}
	if err := core.Authorize(p, op); err != nil {
		if p.Operations == nil || core.ErrorCode(err) != core.CodeInsufficientScope {
			return err
		}
		return core.Errorf(core.KindForbidden, CodeCapabilityNotGranted, "this agent JWT is restricted to %v (its capabilities claim)", allowed(p, a))
	}
	return nil
}

// allowed lists the granted capabilities p may use, for a refusal's text.
func allowed(p core.Principal, a *Agent) []Capability {
	out := []Capability{}
	for _, c := range a.Granted {
		if op, ok := capabilityOps[c]; ok && core.Authorize(p, op) == nil {
			out = append(out, c)
		}
	}
	return out
}

// ownDevice reads the agent behind a device link for the signed-in owner
// (only the host's owner may see it).
func (s *Service) ownDevice(ctx context.Context, ownerID, agentID string) (*Agent, *Host, error) {
	if ownerID == "" || !core.HasPrefix(agentID, core.PrefixDelegatedAgent) || len(agentID) > 100 {
		return nil, nil, agentNotFound()
	}
	a, err := s.d.Store.GetDelegatedAgent(ctx, agentID)
	if errors.Is(err, core.ErrNoRows) || (err == nil && a.OwnerID != ownerID) {
		return nil, nil, agentNotFound()
	} else if err != nil {
		return nil, nil, fmt.Errorf("device request: %w", err)
	}
	h, err := s.d.Store.GetHost(ctx, a.HostID)
	if err != nil {
		return nil, nil, fmt.Errorf("device request: %w", err)
	}
	if h.OwnerID != ownerID {
		return nil, nil, agentNotFound()
	}
	return a, h, nil
}

// openDevice is ownDevice for an agent that can still be decided
// (CodeDeviceExpired / CodeDeviceDecided otherwise).
func (s *Service) openDevice(ctx context.Context, ownerID, agentID string) (*Agent, *Host, error) {
	a, h, err := s.ownDevice(ctx, ownerID, agentID)
	if err != nil {
		return nil, nil, err
	}
	if err := s.codes.Open(deviceState(a)); err != nil {
		return nil, nil, err
	}
	return a, h, nil
}

// DeviceRequestForOwner returns the pending agent behind a device link for
// the signed-in owner (only the host's owner may see it; CodeAgentNotFound
// otherwise, and CodeDeviceExpired / CodeDeviceDecided for a code past its
// life or an agent no longer pending). The user code is checked by
// DecideDevice, not here.
func (s *Service) DeviceRequestForOwner(ctx context.Context, ownerID, agentID string) (*DeviceRequest, error) {
	a, h, err := s.openDevice(ctx, ownerID, agentID)
	if err != nil {
		return nil, err
	}
	return &DeviceRequest{Host: h, Agent: a, ExpiresAt: a.DeviceExpires, TriesLeft: s.codes.TriesLeft(deviceState(a))}, nil
}

// DecideDevice records the owner's decision on a device code: approving
// needs the user code (DeviceMaxTries wrong codes end it) and grants caps,
// a non-empty subset of what the agent asked for (CodeCapabilityWiden
// otherwise; nil means all of it); declining rejects the agent and needs
// no code (the owner is signed in). The inbox approval follows (the
// code-confirmed approval of package approvals).
func (s *Service) DecideDevice(ctx context.Context, ownerID, agentID, userCode string, approve bool, caps []Capability) (*Agent, error) {
	a, _, err := s.openDevice(ctx, ownerID, agentID)
	if err != nil {
		return nil, err
	}
	if _, err := s.codes.Decide(ctx, deviceState(a), devicePort{s: s, a: a},
		approvals.CodeDecision[Capability]{Approve: approve, Code: userCode, Grant: caps}); err != nil {
		return nil, err
	}
	return s.d.Store.GetDelegatedAgent(ctx, a.ID)
}

// DeclineDevice is the approval inbox's Decline of a device approval: the
// agent is rejected, even past its code's expiry. Another owner's or an
// unknown agent is CodeAgentNotFound; an agent no longer pending is left as
// it is.
func (s *Service) DeclineDevice(ctx context.Context, ownerID, agentID string) error {
	a, _, err := s.ownDevice(ctx, ownerID, agentID)
	if err != nil {
		return err
	}
	if err := s.codes.Decline(ctx, deviceState(a), devicePort{s: s, a: a}); err != nil && core.AsError(err).Code != CodeDeviceDecided {
		return err
	}
	return nil
}

// RejectDeviceAgent rejects the pending agent of a device approval the
// owner declined in the inbox (nothing if it is no longer pending, or the
// approval is not its current one).
func (s *Service) RejectDeviceAgent(ctx context.Context, appr *approvals.Approval) error {
	var d DeviceApprovalDetails
	if json.Unmarshal(appr.Details, &d) != nil || d.AgentID == "" {
		return nil
	}
	a, err := s.d.Store.GetDelegatedAgent(ctx, d.AgentID)
	if err != nil || a.OwnerID != appr.OwnerID || a.ApprovalID != appr.ID {
		return nil
	}
	if err := s.codes.Decline(ctx, deviceState(a), devicePort{s: s, a: a}); err != nil && core.AsError(err).Code != CodeDeviceDecided {
		return fmt.Errorf("reject device agent %s: %w", a.ID, err)
	}
	return nil
}
