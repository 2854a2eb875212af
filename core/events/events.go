// Package events is faxhub's event log. Every state change an owner or an
// agent may want to hear about (a fax queued, retried, delivered; a fax
// received; a number active; credits low; an approval waiting) is appended
// here by the feature that makes the change, in the transaction that makes
// it: an event is never lost after a crash and never invented by a
// rollback. Owners read the log (GET /api/v1/events), webhooks deliver it
// (core/webhooks) and A2A streams follow it (protocols/a2a), so any replica
// can serve any of them: the log is in the shared database, not in one
// process's memory. docs/events.md lists every type with an example.
package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
)

// Type names what happened: "<resource>.<what>", stable once published.
type Type string

// The event types, in documentation order.
const (
	FaxScheduled Type = "fax.scheduled"
	FaxQueued    Type = "fax.queued"
	FaxSending   Type = "fax.sending"
	FaxRetrying  Type = "fax.retrying"
	FaxDelivered Type = "fax.delivered"
	FaxPartial   Type = "fax.partial"
	FaxFailed    Type = "fax.failed"
	FaxCanceled  Type = "fax.canceled"

	// BatchCompleted: the last fax of a broadcast ended (each fax has its
	// own fax.* events); written once, by the transaction that ended it.
	BatchCompleted Type = "batch.completed"

	InboundReceived Type = "inbound_fax.received"
	InboundRead     Type = "inbound_fax.read"

	NumberActive        Type = "number.active"
	NumberFailed        Type = "number.failed"
	NumberRenewalFailed Type = "number.renewal_failed"
	NumberReleased      Type = "number.released"

	CreditsPurchased Type = "credits.purchased"
	CreditsLow       Type = "credits.low"

	ApprovalRequested Type = "approval.requested"
	ApprovalDecided   Type = "approval.decided"

	AgentRegistered Type = "agent.registered"
	AgentRevoked    Type = "agent.revoked"

	// WebhookTest is the event an owner sends to an endpoint to try it; it
	// is delivered to that endpoint only and never written to the log.
	WebhookTest Type = "webhook.test"
)

// Kind is what a type tells about, and so who may read it.
type kind struct {
	// scope a credential needs to read events of this type; "" means the
	// account itself (API keys and the owner's console only).
	scope core.Scope
}

// catalog maps each type of the log to who may read it. Faxes and numbers
// are fax:read, received faxes inbox:read, credits credits:read; approvals
// and agents are the account's business.
var catalog = map[Type]kind{
	FaxScheduled: {core.ScopeFaxRead}, FaxQueued: {core.ScopeFaxRead}, FaxSending: {core.ScopeFaxRead}, FaxRetrying: {core.ScopeFaxRead},
	FaxDelivered: {core.ScopeFaxRead}, FaxPartial: {core.ScopeFaxRead}, FaxFailed: {core.ScopeFaxRead},
	FaxCanceled:     {core.ScopeFaxRead},
	BatchCompleted:  {core.ScopeFaxRead},
	InboundReceived: {core.ScopeInboxRead}, InboundRead: {core.ScopeInboxRead},
	NumberActive: {core.ScopeFaxRead}, NumberFailed: {core.ScopeFaxRead}, NumberRenewalFailed: {core.ScopeFaxRead},
	NumberReleased:   {core.ScopeFaxRead},
	CreditsPurchased: {core.ScopeCreditsRead}, CreditsLow: {core.ScopeCreditsRead},
	ApprovalRequested: {}, ApprovalDecided: {},
	AgentRegistered: {}, AgentRevoked: {},
}

// Types returns every type of the log, sorted (a new slice each call).
func Types() []Type {
	out := make([]Type, 0, len(catalog))
	for t := range catalog {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Known reports whether t is a type of the log.
func Known(t Type) bool { _, ok := catalog[t]; return ok }

// Readable reports whether p may read events of type t.
func Readable(p core.Principal, t Type) bool {
	k, ok := catalog[t]
	if !ok {
		return false
	}
	if k.scope == "" {
		return p.Kind == core.PrincipalAPIKey || p.Kind == core.PrincipalOwnerSession
	}
	return p.Has(k.scope)
}

// Event is one entry of the log.
type Event struct {
	// Seq orders the log (assigned by the database); streams resume after
	// the last seq they saw.
	Seq     int64     `db:"seq" json:"-"`
	ID      string    `db:"id" json:"id"`
	OwnerID string    `db:"owner_id" json:"-"`
	Mode    core.Mode `db:"mode" json:"mode"`
	Type    Type      `db:"type" json:"type"`
	// SubjectID is the id of what the event is about: a fax, a received
	// fax, a number, an approval, an agent, the owner (credits).
	SubjectID string          `db:"subject_id" json:"-"`
	Data      json.RawMessage `db:"-" json:"data"`
	CreatedAt time.Time       `db:"created_at" json:"-"`
	// Dispatch is set by the store when the event has somewhere to go
	// (an enabled webhook endpoint or an A2A push config of its owner and
	// mode); the dispatcher clears it.
	Dispatch bool `db:"dispatch" json:"-"`
}

// MarshalJSON renders the event as webhooks deliver it and the list
// returns it: {id, type, timestamp, mode, data}.
func (e Event) MarshalJSON() ([]byte, error) {
	data := e.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	return json.Marshal(struct {
		ID        string          `json:"id"`
		Type      Type            `json:"type"`
		Timestamp string          `json:"timestamp"`
		Mode      core.Mode       `json:"mode"`
		Data      json.RawMessage `json:"data"`
	}{e.ID, e.Type, core.RFC3339(e.CreatedAt), e.Mode, data})
}

// Queries append to the log; every feature that writes events embeds them
// in its Tx.
type Queries interface {
	// AppendEvent inserts e (Seq and Dispatch are set by the store).
	AppendEvent(ctx context.Context, e *Event) error
}

// Store reads the log.
type Store interface {
	Queries
	// ListEvents lists an owner's events of one mode, newest first.
	ListEvents(ctx context.Context, f Filter) ([]Event, error)
	// GetEvent returns one event of an owner and mode.
	GetEvent(ctx context.Context, ownerID string, mode core.Mode, id string) (*Event, error)
	// EventsAfter returns an owner's events of one mode after seq, oldest
	// first, at most limit (what streams follow).
	EventsAfter(ctx context.Context, ownerID string, mode core.Mode, afterSeq int64, limit int) ([]Event, error)
	// LastEventSeq is the seq of the owner's newest event of mode (0 if
	// none): where a stream that wants only what comes next starts.
	LastEventSeq(ctx context.Context, ownerID string, mode core.Mode) (int64, error)
	// PurgeEvents deletes events created before before.
	PurgeEvents(ctx context.Context, before time.Time) (int64, error)
}

// Filter selects events for listing.
type Filter struct {
	OwnerID string
	Mode    core.Mode
	// Types, when not empty, are the only types listed.
	Types []Type
	// BeforeSeq, when > 0, lists events older than this seq (the cursor).
	BeforeSeq int64
	Limit     int
}

// NewEvent builds an event with a fresh id. data is marshalled now, so the
// event says what was true in the transaction that wrote it; data that is
// a json.RawMessage was encoded by its caller (a send encodes its fax once,
// before its transaction) and is copied as it is, not checked and
// compacted again inside the transaction.
func NewEvent(ownerID string, mode core.Mode, t Type, subjectID string, data any, at time.Time) (*Event, error) {
	var b []byte
	if raw, ok := data.(json.RawMessage); ok && len(raw) > 0 {
		b = bytes.Clone(raw)
	} else {
		var err error
		if b, err = json.Marshal(data); err != nil {
			return nil, fmt.Errorf("event %s: encode data: %w", t, err)
		}
	}
	return &Event{ID: core.NewID(core.PrefixEvent), OwnerID: ownerID, Mode: mode, Type: t, SubjectID: subjectID,
		Data: b, CreatedAt: at.UTC()}, nil
}

// Append writes one event in tx. An event without an owner (a fax paid
// by a machine, which has no account) has no one to tell and is not
// written.
func Append(ctx context.Context, tx Queries, ownerID string, mode core.Mode, t Type, subjectID string, data any, at time.Time) error {
	if ownerID == "" {
		return nil
	}
	if !Known(t) {
		return fmt.Errorf("append event: unknown type %q", t)
	}
	e, err := NewEvent(ownerID, mode, t, subjectID, data, at)
	if err != nil {
		return err
	}
	if err := tx.AppendEvent(ctx, e); err != nil {
		return fmt.Errorf("append event %s: %w", t, err)
	}
	return nil
}

// ParseTypes reads a type filter: a comma-separated list of types, where
// "fax.*" stands for every type of a resource. An unknown type is an
// invalid_request naming it.
func ParseTypes(values []string) ([]Type, error) {
	var out []Type
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if prefix, ok := strings.CutSuffix(s, ".*"); ok {
				n := len(out)
				for _, t := range Types() {
					if strings.HasPrefix(string(t), prefix+".") && !slices.Contains(out, t) {
						out = append(out, t)
					}
				}
				if len(out) == n {
					return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "no event type matches %q", s).With("parameter", "type")
				}
				continue
			}
			if !Known(Type(s)) {
				return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "unknown event type %q (see docs/events.md)", s).With("parameter", "type")
			}
			if !slices.Contains(out, Type(s)) {
				out = append(out, Type(s))
			}
		}
	}
	return out, nil
}

// ParseFilter reads a filter as ParseTypes does but keeps each resource
// wildcard ("fax.*") as it is, so that a filter saved today also takes the
// types of that resource added later (Match). The result has no
// duplicates and is sorted.
func ParseFilter(values []string) ([]Type, error) {
	var out []Type
	for _, v := range values {
		for _, tok := range strings.Split(v, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" {
				continue
			}
			if _, err := ParseTypes([]string{tok}); err != nil {
				return nil, err
			}
			if !slices.Contains(out, Type(tok)) {
				out = append(out, Type(tok))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Match reports whether filter (from ParseFilter) takes t: an empty filter
// takes every type; "fax.*" every fax type.
func Match(filter []Type, t Type) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if f == t {
			return true
		}
		if prefix, ok := strings.CutSuffix(string(f), "*"); ok && strings.HasPrefix(string(t), prefix) {
			return true
		}
	}
	return false
}

// Wildcards returns each resource's wildcard ("agent.*", "fax.*", …),
// sorted.
func Wildcards() []string {
	var out []string
	for _, t := range Types() {
		w := string(t)[:strings.IndexByte(string(t), '.')] + ".*"
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}
