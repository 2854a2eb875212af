package faxes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
)

// ListRequest selects a page of the principal's faxes: by status, by the
// period they were created in, after a cursor. Every door lists through
// it, so the rules below are decided once.
type ListRequest struct {
	Status string
	// CreatedFrom and CreatedTo bound the period, as text (ParsePeriod):
	// from is inclusive, to exclusive; a date alone is that day in UTC,
	// so to=2026-11-29 takes the whole of the 29th.
	CreatedFrom, CreatedTo string
	StartingAfter          string
	Limit                  int
}

// The period's bounds: a time of day before 2000 or after 9999 is a
// mistake, and the text is short (a date or an RFC 3339 time).
var (
	minPeriod = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxPeriod = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
)

const maxPeriodText = 40

// ParsePeriodBound reads one bound of a period: an RFC 3339 time, or a
// date (YYYY-MM-DD, UTC) meaning the start of that day, or with end the
// start of the next day (an inclusive last day). Empty is no bound (nil).
// field names the parameter in the error.
func ParsePeriodBound(field, s string, end bool) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	bad := func() error {
		return core.Errorf(core.KindInvalid, CodeInvalidPeriod, "%s must be a date (2026-11-29) or an RFC 3339 time (2026-11-29T13:00:00Z) between 2000 and 9999", field).
			With("field", field)
	}
	if len(s) > maxPeriodText {
		return nil, bad()
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		d, derr := time.Parse(time.DateOnly, s)
		if derr != nil {
			return nil, bad()
		}
		t = d
		if end {
			t = t.AddDate(0, 0, 1)
		}
	}
	if t.Before(minPeriod) || t.After(maxPeriod) {
		return nil, bad()
	}
	t = t.UTC()
	return &t, nil
}

// filter checks r and makes it p's store filter (limit+1, to learn
// whether there is more).
func (s *Service) filter(ctx context.Context, p core.Principal, r ListRequest) (Filter, int, error) {
	limit, err := core.CheckLimit(r.Limit)
	if err != nil {
		return Filter{}, 0, err
	}
	if r.Status != "" && !slices.Contains(Statuses, Status(r.Status)) {
		return Filter{}, 0, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "status must be one of %s", joinStatuses()).With("field", "status")
	}
	from, err := ParsePeriodBound("created_from", r.CreatedFrom, false)
	if err != nil {
		return Filter{}, 0, err
	}
	to, err := ParsePeriodBound("created_to", r.CreatedTo, true)
	if err != nil {
		return Filter{}, 0, err
	}
	if from != nil && to != nil && !from.Before(*to) {
		return Filter{}, 0, core.Errorf(core.KindInvalid, CodeInvalidPeriod, "created_from must be before created_to").With("field", "created_from")
	}
	if r.StartingAfter != "" {
		if _, err := s.d.Store.GetFax(ctx, p.OwnerID, p.Mode, r.StartingAfter); err != nil {
			if errors.Is(err, core.ErrNoRows) {
				return Filter{}, 0, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "starting_after names no fax of yours").With("field", "starting_after")
			}
			return Filter{}, 0, err
		}
	}
	return Filter{OwnerID: p.OwnerID, Mode: p.Mode, Status: Status(r.Status), CreatedFrom: from, CreatedTo: to,
		StartingAfter: r.StartingAfter, Limit: limit + 1}, limit, nil
}

// List lists the principal's faxes, newest first, a page at a time (at
// most core.MaxListLimit, one indexed query). The latest attempt is not
// included in lists (use Get).
func (s *Service) List(ctx context.Context, p core.Principal, r ListRequest) (*core.Page[Fax], error) {
	if err := core.Authorize(p, core.OpListFaxes); err != nil {
		return nil, err
	}
	f, limit, err := s.filter(ctx, p, r)
	if err != nil {
		return nil, err
	}
	faxes, err := s.d.Store.ListFaxes(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list faxes: %w", err)
	}
	page := &core.Page[Fax]{Data: faxes}
	if len(faxes) > limit {
		page.Data, page.HasMore = faxes[:limit], true
		page.Next = page.Data[limit-1].ID
	}
	for i := range page.Data {
		s.Present(&page.Data[i], nil)
	}
	if page.Data == nil {
		page.Data = []Fax{}
	}
	return page, nil
}

func joinStatuses() string {
	parts := make([]string, len(Statuses))
	for i, st := range Statuses {
		parts[i] = string(st)
	}
	return strings.Join(parts, ", ")
}
