package faxes

import (
	"context"
	"fmt"

	"github.com/faxhub/faxhub/core/events"
)

// eventFor is the event a fax's move from prev to its status means ("" for
// none: an attempt's progress while sending changes no status).
func eventFor(prev, now Status) events.Type {
	if prev == now {
		return ""
	}
	switch now {
	case Scheduled:
		return events.FaxScheduled
	case Queued:
		if prev == Sending {
			return events.FaxRetrying // an attempt failed and another is due
		}
		return events.FaxQueued
	case Sending:
		return events.FaxSending
	case Delivered:
		return events.FaxDelivered
	case Partial:
		return events.FaxPartial
	case Failed:
		return events.FaxFailed
	case Canceled:
		return events.FaxCanceled
	}
	return ""
}

// saveFax writes o if its stored status is from (UpdateFax) and appends, in
// the same transaction, the event its new status means. latest is the
// attempt the event shows (nil: none yet).
func (s *Service) saveFax(ctx context.Context, tx Tx, o *Fax, latest *Attempt, from Status) error {
	return s.moveFax(ctx, tx, Move{Fax: o, From: []Status{from}}, latest)
}

// moveFax writes m with the event its fax's new status means (see
// saveFax).
func (s *Service) moveFax(ctx context.Context, tx Tx, m Move, latest *Attempt) error {
	o, from := m.Fax, m.From[0]
	e, err := s.faxEventOf(o, latest, from)
	if err != nil {
		return err
	}
	m.Event = e
	if err := tx.MoveFax(ctx, m); err != nil {
		return err
	}
	if o.BatchID != nil && o.Status.Terminal() && !from.Terminal() {
		return s.batchFaxEnded(ctx, tx, o)
	}
	return nil
}

// faxEvent appends the event of o's move from prev. The event's data is the
// fax as GET /api/v1/faxes/{id} shows it at that moment. A fax paid by a
// machine belongs to no account, so it has no one to tell.
func (s *Service) faxEvent(ctx context.Context, tx Tx, o *Fax, latest *Attempt, prev Status) error {
	e, err := s.faxEventOf(o, latest, prev)
	if err != nil || e == nil {
		return err
	}
	return appendFaxEvent(ctx, tx, o, e)
}

// faxEventOf is faxEvent's event, not yet written: nil when the move means
// none or the fax has no one to tell. Built before the fax's update, so
// that the store can write both in one statement (MoveFax).
func (s *Service) faxEventOf(o *Fax, latest *Attempt, prev Status) (*events.Event, error) {
	t := faxEventType(o, prev)
	if t == "" {
		return nil, nil
	}
	view := *o
	s.Present(&view, latest)
	return newFaxEvent(o, t, &view)
}

// faxEventData is faxEvent with the event's data given: o presented, as a
// value or already encoded.
func (s *Service) faxEventData(ctx context.Context, tx Tx, o *Fax, prev Status, data any) error {
	t := faxEventType(o, prev)
	if t == "" {
		return nil
	}
	e, err := newFaxEvent(o, t, data)
	if err != nil {
		return err
	}
	return appendFaxEvent(ctx, tx, o, e)
}

// faxEventType is the event o's move from prev writes: "" when the move
// means none, or the fax has no account to tell (a machine's).
func faxEventType(o *Fax, prev Status) events.Type {
	if o.PaymentMethod == PayMachine || o.OwnerID == "" {
		return ""
	}
	return eventFor(prev, o.Status)
}

// newFaxEvent is o's event of type t with data, at o's last change.
func newFaxEvent(o *Fax, t events.Type, data any) (*events.Event, error) {
	at := o.UpdatedAt
	if at.IsZero() {
		at = o.CreatedAt
	}
	e, err := events.NewEvent(o.OwnerID, o.Mode, t, o.ID, data, at)
	if err != nil {
		return nil, fmt.Errorf("fax %s: %w", o.ID, err)
	}
	return e, nil
}

func appendFaxEvent(ctx context.Context, tx Tx, o *Fax, e *events.Event) error {
	if err := tx.AppendEvent(ctx, e); err != nil {
		return fmt.Errorf("fax %s: append event %s: %w", o.ID, e.Type, err)
	}
	return nil
}
