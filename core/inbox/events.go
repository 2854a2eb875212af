package inbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
)

// EventFax is a received fax as its events show it: what GET
// /api/v1/inbox/{id} shows but its text (the pages' content stays behind
// the API: an event names the fax and where to read it), and no download
// link (a signed link would outlive the event's purpose).
type EventFax struct {
	InboundFax
	// Path is where the API serves the fax whole (GET, with an API key).
	Path string `json:"path"`
	// ReadBy says who read it first (inbound_fax.read only).
	ReadBy *Reader `json:"readBy,omitempty"`
}

// Reader is who read a received fax first: the kind of credential and,
// for an app or an agent, the name the owner knows it by.
type Reader struct {
	Kind core.PrincipalKind `json:"kind"`
	Name string             `json:"name,omitempty"`
}

func eventFax(f *InboundFax) EventFax {
	v := EventFax{InboundFax: *f, Path: "/api/v1/inbox/" + f.ID}
	v.Text, v.TextPreview = "", ""
	return v
}

// finishInbound records the end of f's processing (f.Status received or
// failed, read by the caller) if it is still receiving, and writes
// inbound_fax.received in the same transaction: whatever the outcome, one
// event per fax that arrived, its data.status saying whether it can be
// read (received) or not (failed, with failureReason). ErrConflict when
// another run finished it first.
func (s *Service) finishInbound(ctx context.Context, f *InboundFax) error {
	return s.inTx(ctx, func(tx Tx) error {
		if err := tx.UpdateInboundFax(ctx, f, Receiving); err != nil {
			return err
		}
		return events.Append(ctx, tx, f.OwnerID, f.Mode, events.InboundReceived, f.ID, eventFax(f), f.UpdatedAt)
	})
}

// markRead records that p read f whole, the first time a received fax is
// read: a conditional update, so of concurrent readers on any replica one
// writes inbound_fax.read. f gets its read_at.
func (s *Service) markRead(ctx context.Context, p core.Principal, f *InboundFax) error {
	if f.Status != Received || f.ReadAt != nil {
		return nil
	}
	now := s.now()
	err := s.inTx(ctx, func(tx Tx) error {
		if err := tx.MarkInboundFaxRead(ctx, f.ID, now); err != nil {
			return err
		}
		read := *f
		read.ReadAt = &now
		v := eventFax(&read)
		v.ReadBy = &Reader{Kind: p.Kind, Name: core.CutUTF8(p.ClientName, 200)}
		return events.Append(ctx, tx, f.OwnerID, f.Mode, events.InboundRead, f.ID, v, now)
	})
	switch {
	case err == nil:
		f.ReadAt = &now
	case errors.Is(err, core.ErrConflict):
		// Another reader was first: show its time.
		cur, gerr := s.d.Store.GetInboundFaxByID(ctx, f.ID)
		if gerr != nil {
			return fmt.Errorf("read received fax %s: %w", f.ID, gerr)
		}
		f.ReadAt = cur.ReadAt
	default:
		return fmt.Errorf("mark received fax %s read: %w", f.ID, err)
	}
	return nil
}
