package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/faxhub/faxhub/core"
)

// Retention is how long the log keeps an event (docs/events.md): long
// enough for a client that missed three days of webhook retries to catch
// up, short enough that the log stays small.
const Retention = 30 * 24 * time.Hour

// Service reads the log for owners and streams.
type Service struct {
	store Store
	now   func() time.Time
}

// New builds the service.
func New(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// List returns p's events of its mode, newest first, those of types when
// given, starting after the event startingAfter. Only the types p may read
// are listed (Readable): a chat app with fax:read sees faxes, not approvals.
func (s *Service) List(ctx context.Context, p core.Principal, types []Type, startingAfter string, limit int) (*core.Page[Event], error) {
	if err := core.Authorize(p, core.OpListEvents); err != nil {
		return nil, err
	}
	limit, err := core.CheckLimit(limit)
	if err != nil {
		return nil, err
	}
	readable := make([]Type, 0, len(catalog))
	for _, t := range Types() {
		if Readable(p, t) && (len(types) == 0 || slices.Contains(types, t)) {
			readable = append(readable, t)
		}
	}
	for _, t := range types {
		if !Readable(p, t) {
			return nil, core.Errorf(core.KindForbidden, core.CodeInsufficientScope, "this credential may not read %s events", t).With("parameter", "type")
		}
	}
	f := Filter{OwnerID: p.OwnerID, Mode: p.Mode, Limit: limit + 1}
	if len(readable) < len(catalog) {
		f.Types = readable
	}
	if startingAfter != "" {
		var e *Event
		err := core.ErrNoRows // a cursor that cannot be an id is asked of no database
		if core.WellFormedID(startingAfter) {
			e, err = s.store.GetEvent(ctx, p.OwnerID, p.Mode, startingAfter)
		}
		if errors.Is(err, core.ErrNoRows) {
			return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "starting_after names no event of yours (events are kept %d days)", int(Retention.Hours()/24)).With("parameter", "starting_after")
		} else if err != nil {
			return nil, fmt.Errorf("list events: cursor: %w", err)
		}
		f.BeforeSeq = e.Seq
	}
	list, err := s.store.ListEvents(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	page := &core.Page[Event]{Data: list}
	if len(list) > limit {
		page.Data, page.HasMore = list[:limit], true
		page.Next = page.Data[limit-1].ID
	}
	if page.Data == nil {
		page.Data = []Event{}
	}
	return page, nil
}

// Get returns one of p's events (not_found for another owner's, or a type
// p may not read).
func (s *Service) Get(ctx context.Context, p core.Principal, id string) (*Event, error) {
	if err := core.Authorize(p, core.OpListEvents); err != nil {
		return nil, err
	}
	if !core.WellFormedID(id) {
		return nil, core.Errorf(core.KindNotFound, core.CodeNotFound, "no event %q", core.CutUTF8(id, core.MaxIDLen))
	}
	e, err := s.store.GetEvent(ctx, p.OwnerID, p.Mode, id)
	if errors.Is(err, core.ErrNoRows) || (err == nil && !Readable(p, e.Type)) {
		return nil, core.Errorf(core.KindNotFound, core.CodeNotFound, "no event %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("get event: %w", err)
	}
	return e, nil
}

// Cursor is where a follower of an owner's log stands.
type Cursor struct {
	OwnerID string
	Mode    core.Mode
	Seq     int64
}

// Tail returns a cursor at the end of the owner's log now: a follower that
// starts there sees what happens next.
func (s *Service) Tail(ctx context.Context, ownerID string, mode core.Mode) (Cursor, error) {
	seq, err := s.store.LastEventSeq(ctx, ownerID, mode)
	if err != nil {
		return Cursor{}, fmt.Errorf("tail events: %w", err)
	}
	return Cursor{OwnerID: ownerID, Mode: mode, Seq: seq}, nil
}

// Next returns the events after c (oldest first, at most limit) and the
// cursor after them. Followers poll it: the log is in the shared database,
// so a follower on one replica sees what another replica wrote.
func (s *Service) Next(ctx context.Context, c Cursor, limit int) ([]Event, Cursor, error) {
	list, err := s.store.EventsAfter(ctx, c.OwnerID, c.Mode, c.Seq, limit)
	if err != nil {
		return nil, c, fmt.Errorf("follow events: %w", err)
	}
	if n := len(list); n > 0 {
		c.Seq = list[n-1].Seq
	}
	return list, c, nil
}

// Purge deletes what Retention no longer keeps (the garbage collector).
func (s *Service) Purge(ctx context.Context) (int64, error) {
	n, err := s.store.PurgeEvents(ctx, s.now().Add(-Retention))
	if err != nil {
		return 0, fmt.Errorf("purge events: %w", err)
	}
	return n, nil
}
