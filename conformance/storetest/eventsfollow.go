package storetest

import (
	"fmt"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/services"
)

// testEventsFollow: what a task stream reads of the log (core/tasks
// follow.go). LastEventSeq is the owner's newest seq in one mode (0 with
// none); EventsAfter returns that owner's and mode's events after a seq,
// oldest first, at most n, and a follower that moves its cursor to the
// last one it read sees each event once, whatever other owners and the
// other mode write between its reads.
func testEventsFollow(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	last, err := s.LastEventSeq(ctx, o.ID, core.ModeTest)
	must(t, err)
	if last != 0 {
		t.Fatalf("LastEventSeq of an owner without events: %d", last)
	}
	appendOne := func(owner string, mode core.Mode, i int) string {
		e, err := events.NewEvent(owner, mode, events.FaxQueued, fmt.Sprintf("fax_%d", i), map[string]int{"i": i}, at(i))
		must(t, err)
		must(t, s.AppendEvent(ctx, e))
		return e.ID
	}
	var mine []string
	for i := range 5 {
		mine = append(mine, appendOne(o.ID, core.ModeTest, i))
		appendOne(other.ID, core.ModeTest, i)
		appendOne(o.ID, core.ModeLive, i)
	}
	cursor := int64(0)
	var read []string
	for range 10 {
		list, err := s.EventsAfter(ctx, o.ID, core.ModeTest, cursor, 2)
		must(t, err)
		if len(list) > 2 {
			t.Fatalf("EventsAfter with n 2 returned %d", len(list))
		}
		if len(list) == 0 {
			break
		}
		for _, e := range list {
			if e.OwnerID != o.ID || e.Mode != core.ModeTest || e.Seq <= cursor || len(e.Data) == 0 {
				t.Fatalf("EventsAfter(%d): %+v", cursor, e)
			}
			read = append(read, e.ID)
			cursor = e.Seq
		}
		// Written between two reads: read by the next one.
		if len(read) == 2 {
			mine = append(mine, appendOne(o.ID, core.ModeTest, 9))
		}
	}
	wantEqual(t, "the owner's events, once each, in order", read, mine)
	last, err = s.LastEventSeq(ctx, o.ID, core.ModeTest)
	must(t, err)
	if last != cursor {
		t.Fatalf("LastEventSeq %d, the last event read %d", last, cursor)
	}
	list, err := s.EventsAfter(ctx, o.ID, core.ModeTest, last, 100)
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("EventsAfter the last seq: %d events", len(list))
	}
}
