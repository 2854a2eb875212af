package agents

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

// Kinds of agent in agent events.
const (
	// EventRegistration is an agent registered with an enrollment token
	// (this package).
	EventRegistration = "registration"
	// EventDelegated is a delegated agent a host registered (core/hosts).
	EventDelegated = "delegated"
)

// Who revoked an agent.
const (
	RevokedByOwner = "owner"
	RevokedByAgent = "agent"
	RevokedByHost  = "host"
)

// EventAgent is an agent as agent.registered and agent.revoked show it:
// what the owner's console shows of it, camelCase, and never a credential
// (claim token, user code, key, assertion).
type EventAgent struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Type is a registration's: service_auth or anonymous.
	Type string `json:"type,omitempty"`
	// HostID and HostName are a delegated agent's host.
	HostID   string `json:"hostId,omitempty"`
	HostName string `json:"hostName,omitempty"`
	Status   string `json:"status"`
	// Scopes are a registration's (requested until the owner approves its
	// claim); Capabilities a delegated agent's (granted, or requested while
	// it waits for the owner's device approval).
	Scopes       []string `json:"scopes,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	CreatedAt    string   `json:"createdAt"`
	RevokedAt    string   `json:"revokedAt,omitempty"`
	RevokedBy    string   `json:"revokedBy,omitempty"`
}

// registrationEvent is r as its events show it.
func registrationEvent(r *Registration, by string) EventAgent {
	v := EventAgent{ID: r.ID, Kind: EventRegistration, Name: r.Name, Type: r.Type, Status: r.Status, Scopes: r.Scopes,
		CreatedAt: core.RFC3339(r.CreatedAt), RevokedBy: by}
	if r.RevokedAt != nil {
		v.RevokedAt = core.RFC3339(*r.RevokedAt)
	}
	return v
}

// revoke revokes an active registration (of ownerID unless empty) and
// writes agent.revoked in the same transaction; ErrNoRows when there is no
// active one.
func (s *Service) revoke(ctx context.Context, ownerID, id, by string) error {
	now := s.now()
	return s.inTx(ctx, func(tx Tx) error {
		if err := tx.RevokeAgentRegistration(ctx, ownerID, id, now); err != nil {
			return err
		}
		r, err := tx.GetAgentRegistration(ctx, id)
		if err != nil {
			return fmt.Errorf("read revoked registration: %w", err)
		}
		return events.Append(ctx, tx, r.OwnerID, s.cfg.AgentMode, events.AgentRevoked, r.ID, registrationEvent(r, by), now)
	})
}

// register records r and its claim, consuming enrollment enrollmentID
// (ErrConflict when it is not live), and writes agent.registered, in one
// transaction.
func (s *Service) register(ctx context.Context, enrollmentID string, r *Registration, c *Claim) error {
	return s.inTx(ctx, func(tx Tx) error {
		if err := tx.RegisterAgent(ctx, enrollmentID, r, c); err != nil {
			return err
		}
		return events.Append(ctx, tx, r.OwnerID, s.cfg.AgentMode, events.AgentRegistered, r.ID, registrationEvent(r, ""), r.CreatedAt)
	})
}

// isNotActive reports revoke's ErrNoRows: no active registration.
func isNotActive(err error) bool { return errors.Is(err, core.ErrNoRows) }

// AppendEvent writes an agent event for another feature's agents
// (delegated agents, core/hosts), in tx, in the agents' mode.
func AppendEvent(ctx context.Context, tx events.Queries, ownerID string, mode core.Mode, t events.Type, v EventAgent, at time.Time) error {
	return events.Append(ctx, tx, ownerID, mode, t, v.ID, v, at)
}
