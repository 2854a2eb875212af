package hosts

import (
	"context"
	"fmt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/events"
)

// Delegated agents write agent.registered and agent.revoked like the
// agents that register with an enrollment token: each acts on the owner's
// account, and the owner hears of both kinds the same way (data.kind says
// which). Their device approval is approval.requested/approval.decided.

// agentEvent is a as agent events show it.
func agentEvent(a *Agent, hostName, by string) agents.EventAgent {
	caps := a.Granted
	if a.Status != AgentActive {
		caps = a.Requested
	}
	names := make([]string, len(caps))
	for i, c := range caps {
		names[i] = string(c)
	}
	v := agents.EventAgent{ID: a.ID, Kind: agents.EventDelegated, Name: a.Name, HostID: a.HostID, HostName: hostName,
		Status: string(a.Status), Capabilities: names, CreatedAt: core.RFC3339(a.CreatedAt), RevokedBy: by}
	if a.RevokedAt != nil {
		v.RevokedAt = core.RFC3339(*a.RevokedAt)
	}
	return v
}

// revokeAgent revokes a, by its host or its owner, and writes agent.revoked
// in one transaction; ErrConflict when it is rejected or revoked already.
func (s *Service) revokeAgent(ctx context.Context, a *Agent, by string) error {
	now := s.now()
	return s.inTx(ctx, func(tx Tx) error {
		if err := tx.RevokeDelegatedAgent(ctx, a.ID, now); err != nil {
			return err
		}
		cur, err := tx.GetDelegatedAgent(ctx, a.ID)
		if err != nil {
			return fmt.Errorf("read revoked agent: %w", err)
		}
		return agents.AppendEvent(ctx, tx, cur.OwnerID, s.cfg.AgentMode, events.AgentRevoked, agentEvent(cur, s.hostName(ctx, tx, cur.HostID), by), now)
	})
}

// revokeHost revokes the owner's host and its pending and active agents,
// and writes agent.revoked for each of them, in one transaction.
func (s *Service) revokeHost(ctx context.Context, ownerID, hostID string) error {
	now := s.now()
	return s.inTx(ctx, func(tx Tx) error {
		all, err := tx.ListDelegatedAgents(ctx, ownerID)
		if err != nil {
			return fmt.Errorf("list the host's agents: %w", err)
		}
		if err := tx.RevokeHost(ctx, ownerID, hostID, now); err != nil {
			return err
		}
		name := s.hostName(ctx, tx, hostID)
		for i := range all {
			a := &all[i]
			if a.HostID != hostID || (a.Status != AgentPending && a.Status != AgentActive) {
				continue
			}
			a.Status, a.RevokedAt = AgentRevoked, &now
			if err := agents.AppendEvent(ctx, tx, ownerID, s.cfg.AgentMode, events.AgentRevoked, agentEvent(a, name, agents.RevokedByOwner), now); err != nil {
				return err
			}
		}
		return nil
	})
}

// hostName is the name of host id, "" when it cannot be read (the event
// still names the host by id).
func (s *Service) hostName(ctx context.Context, tx Tx, id string) string {
	h, err := tx.GetHost(ctx, id)
	if err != nil {
		return ""
	}
	return h.Name
}
