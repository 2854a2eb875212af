package storetest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/tasks"
)

// eventTests are the event log's queries (core/events) and what the
// features that write it need of the store.
var eventTests = []struct {
	name string
	run  func(t *testing.T, s services.Store)
}{
	{"EventDispatch", testEventDispatch},
	{"ListEvents", testListEvents},
	{"EventsConcurrent", testEventsConcurrent},
	{"InboundRead", testInboundRead},
	{"LowBalanceThreshold", testLowBalanceThreshold},
	{"ApprovalMode", testApprovalMode},
}

func newEvent(t *testing.T, s services.Store, o *accounts.Owner, mode core.Mode, typ events.Type, sec int) *events.Event {
	t.Helper()
	e, err := events.NewEvent(o.ID, mode, typ, "sub_"+fmt.Sprint(sec), map[string]any{"n": sec, "text": "ünïcödé \u2028"}, at(sec))
	must(t, err)
	must(t, s.AppendEvent(t.Context(), e))
	return e
}

// execSQL runs one statement of literal SQL in a transaction: the
// webhook endpoints and push configs the log asks about at insert time
// belong to features with stores of their own, so this suite writes the
// rows it needs directly.
func execSQL(t *testing.T, s services.Store, stmt string) {
	t.Helper()
	must(t, inTx(t.Context(), s, func(tx services.Tx) error {
		st, ok := tx.(interface{ SQLTx() *sql.Tx })
		if !ok {
			return fmt.Errorf("%T has no SQLTx", tx)
		}
		_, err := st.SQLTx().ExecContext(t.Context(), stmt)
		return err
	}))
}

// testEventDispatch: an event is marked for dispatch only when its owner
// has, in its mode, an enabled webhook endpoint or an A2A push config.
func testEventDispatch(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	dispatch := func(owner *accounts.Owner, mode core.Mode) bool {
		t.Helper()
		e := newEvent(t, s, owner, mode, events.FaxQueued, 1)
		got, err := s.GetEvent(ctx, owner.ID, mode, e.ID)
		must(t, err)
		return got.Dispatch
	}
	endpoint := func(owner *accounts.Owner, mode core.Mode, enabled bool) {
		execSQL(t, s, fmt.Sprintf(`INSERT INTO webhook_endpoints (id, owner_id, mode, url, enabled, created_at, updated_at)
			VALUES ('%s', '%s', '%s', 'https://hooks.example/x', %t, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`,
			core.NewID(core.PrefixWebhookEndpoint), owner.ID, mode, enabled))
	}
	steps := []struct {
		name  string
		setup func()
		want  map[core.Mode]bool // o's events by mode
	}{
		{"nowhere to go", func() {}, map[core.Mode]bool{core.ModeTest: false, core.ModeLive: false}},
		{"a disabled endpoint", func() { endpoint(o, core.ModeTest, false) }, map[core.Mode]bool{core.ModeTest: false, core.ModeLive: false}},
		{"an enabled live endpoint", func() { endpoint(o, core.ModeLive, true) }, map[core.Mode]bool{core.ModeTest: false, core.ModeLive: true}},
		{"a test push config", func() {
			must(t, s.CreatePushConfig(t.Context(), &tasks.PushConfig{ID: core.NewID(core.PrefixPushConfig), OwnerID: o.ID, Mode: core.ModeTest,
				TaskID: "tsk_x", ConfigID: "tsk_x", URL: "https://push.example/x", CreatedAt: at(0)}))
		}, map[core.Mode]bool{core.ModeTest: true, core.ModeLive: true}},
	}
	for _, st := range steps {
		st.setup()
		for mode, want := range st.want {
			if got := dispatch(o, mode); got != want {
				t.Errorf("%s: a %s event's dispatch = %v, want %v", st.name, mode, got, want)
			}
		}
		for _, mode := range []core.Mode{core.ModeTest, core.ModeLive} {
			if dispatch(other, mode) {
				t.Errorf("%s: another owner's %s event is dispatched", st.name, mode)
			}
		}
	}
}

// testListEvents: newest first by seq, per owner and mode, filtered by
// type, continued before a cursor; one event by id; the followers' reads
// (EventsAfter, LastEventSeq); data and times round-trip.
func testListEvents(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	if seq, err := s.LastEventSeq(ctx, o.ID, core.ModeTest); err != nil || seq != 0 {
		t.Fatalf("LastEventSeq of an empty log = %d, %v", seq, err)
	}
	types := []events.Type{events.FaxQueued, events.FaxDelivered, events.CreditsLow}
	var made []*events.Event
	for i := range 9 {
		made = append(made, newEvent(t, s, o, core.ModeTest, types[i%3], 10+i))
	}
	newEvent(t, s, o, core.ModeLive, events.FaxQueued, 30)
	newEvent(t, s, other, core.ModeTest, events.FaxQueued, 31)

	list := func(f events.Filter) []string {
		t.Helper()
		f.OwnerID, f.Mode = o.ID, core.ModeTest
		got, err := s.ListEvents(ctx, f)
		must(t, err)
		ids := make([]string, len(got))
		for i, e := range got {
			ids[i] = e.ID
		}
		return ids
	}
	want := func(idx ...int) []string {
		out := make([]string, len(idx))
		for i, j := range idx {
			out[i] = made[j].ID
		}
		return out
	}
	all, err := s.ListEvents(ctx, events.Filter{OwnerID: o.ID, Mode: core.ModeTest})
	must(t, err)
	if len(all) != 9 {
		t.Fatalf("ListEvents lists %d, want 9", len(all))
	}
	for i, e := range all {
		if i > 0 && e.Seq >= all[i-1].Seq {
			t.Fatalf("not newest first by seq: %d after %d", e.Seq, all[i-1].Seq)
		}
	}
	wantEqual(t, "newest first", list(events.Filter{}), want(8, 7, 6, 5, 4, 3, 2, 1, 0))
	wantEqual(t, "limit", list(events.Filter{Limit: 2}), want(8, 7))
	wantEqual(t, "one type", list(events.Filter{Types: []events.Type{events.FaxDelivered}}), want(7, 4, 1))
	wantEqual(t, "two types", list(events.Filter{Types: []events.Type{events.FaxQueued, events.CreditsLow}, Limit: 4}), want(8, 6, 5, 3))
	cursor := all[3].Seq // made[5]
	wantEqual(t, "before a cursor", list(events.Filter{BeforeSeq: cursor, Limit: 3}), want(4, 3, 2))
	wantEqual(t, "before a cursor, one type", list(events.Filter{BeforeSeq: cursor, Types: []events.Type{events.FaxQueued}}), want(3, 0))
	wantEqual(t, "a type with no events", list(events.Filter{Types: []events.Type{events.AgentRevoked}}), []string{})

	got, err := s.GetEvent(ctx, o.ID, core.ModeTest, made[4].ID)
	must(t, err)
	want4 := *made[4]
	want4.Seq, want4.Dispatch = got.Seq, false
	if !json.Valid(got.Data) || string(got.Data) != string(made[4].Data) {
		t.Fatalf("data round trip: %s, want %s", got.Data, made[4].Data)
	}
	wantEqual(t, "GetEvent", got, &want4)
	for _, c := range []struct {
		name  string
		owner string
		mode  core.Mode
		id    string
	}{{"another owner's", other.ID, core.ModeTest, made[4].ID}, {"in another mode", o.ID, core.ModeLive, made[4].ID}, {"unknown", o.ID, core.ModeTest, "evt_missing"}} {
		_, err := s.GetEvent(ctx, c.owner, c.mode, c.id)
		wantErr(t, "GetEvent "+c.name, err, core.ErrNoRows)
	}

	after, err := s.EventsAfter(ctx, o.ID, core.ModeTest, all[5].Seq, 2) // after made[3]
	must(t, err)
	if len(after) != 2 || after[0].ID != made[4].ID || after[1].ID != made[5].ID {
		t.Fatalf("EventsAfter: %s", dump(after))
	}
	rest, err := s.EventsAfter(ctx, o.ID, core.ModeTest, all[0].Seq, 10)
	must(t, err)
	if len(rest) != 0 {
		t.Fatalf("EventsAfter the newest: %d", len(rest))
	}
	last, err := s.LastEventSeq(ctx, o.ID, core.ModeTest)
	must(t, err)
	if last != all[0].Seq {
		t.Fatalf("LastEventSeq = %d, want %d", last, all[0].Seq)
	}
	if l, _ := s.LastEventSeq(ctx, other.ID, core.ModeLive); l != 0 {
		t.Fatalf("LastEventSeq of an owner's empty mode = %d", l)
	}
}

// testEventsConcurrent: events appended at once get distinct seqs, and a
// follower reads each once.
func testEventsConcurrent(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	errs := race(concurrency, func(i int) error {
		e, err := events.NewEvent(o.ID, core.ModeTest, events.FaxQueued, "x", map[string]int{"i": i}, at(i))
		if err != nil {
			return err
		}
		return inTx(ctx, s, func(tx services.Tx) error { return tx.AppendEvent(ctx, e) })
	})
	for _, err := range errs {
		must(t, err)
	}
	seen := map[int64]bool{}
	var cursor int64
	for {
		page, err := s.EventsAfter(ctx, o.ID, core.ModeTest, cursor, 7)
		must(t, err)
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if seen[e.Seq] || e.Seq <= cursor {
				t.Fatalf("seq %d read twice or out of order", e.Seq)
			}
			seen[e.Seq], cursor = true, e.Seq
		}
	}
	if len(seen) != concurrency {
		t.Fatalf("a follower read %d of %d events", len(seen), concurrency)
	}
}

// testPurgeEvents: what is older than the cutoff goes, the rest stays.
func testPurgeEvents(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	var kept []string
	for i, owner := range []*accounts.Owner{o, other, o, other, o, other} {
		e := newEvent(t, s, owner, core.ModeTest, events.FaxQueued, i*10)
		if i >= 3 {
			kept = append(kept, e.ID)
		}
	}
	n, err := s.PurgeEvents(ctx, at(25))
	wantPurged(t, "PurgeEvents", n, err, 3)
	n, err = s.PurgeEvents(ctx, at(25))
	wantPurged(t, "PurgeEvents again", n, err, 0)
	var left []string
	for _, owner := range []*accounts.Owner{o, other} {
		got, err := s.ListEvents(ctx, events.Filter{OwnerID: owner.ID, Mode: core.ModeTest})
		must(t, err)
		for _, e := range got {
			left = append(left, e.ID)
		}
	}
	slices.Sort(left)
	slices.Sort(kept)
	wantEqual(t, "left after the purge", left, kept)
	n, err = s.PurgeEvents(ctx, at(1000))
	wantPurged(t, "PurgeEvents of everything", n, err, 3)
}

// testInboundRead: a received fax is marked read once; a fax not received
// or read already is a conflict, an unknown one not found.
func testInboundRead(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	n := newNumber(t, s, o, "+12125550121", numbers.Active, 0)
	f := &inbox.InboundFax{ID: core.NewID(core.PrefixInbound), OwnerID: o.ID, Mode: core.ModeTest, NumberID: n.ID, To: n.E164,
		Status: inbox.Receiving, Provider: "simulated", ProviderRef: "ref-read", ReceivedAt: at(0), CreatedAt: at(0), UpdatedAt: at(0)}
	must(t, s.CreateInboundFax(ctx, f))
	wantErr(t, "mark a receiving fax read", s.MarkInboundFaxRead(ctx, f.ID, at(5)), core.ErrConflict)
	f.Status, f.ProcessedAt = inbox.Received, ptr(at(1))
	must(t, s.UpdateInboundFax(ctx, f, inbox.Receiving))
	errs := race(concurrency, func(i int) error {
		return inTx(ctx, s, func(tx services.Tx) error { return tx.MarkInboundFaxRead(ctx, f.ID, at(10+i)) })
	})
	ok, conflicts := countErrs(t, "MarkInboundFaxRead", errs, core.ErrConflict)
	if ok != 1 || conflicts != concurrency-1 {
		t.Fatalf("MarkInboundFaxRead: %d marked, %d conflicts", ok, conflicts)
	}
	got, err := s.GetInboundFax(ctx, o.ID, core.ModeTest, f.ID)
	must(t, err)
	if got.ReadAt == nil || got.ReadAt.Before(at(10)) {
		t.Fatalf("read_at %v", got.ReadAt)
	}
	first := *got.ReadAt
	wantErr(t, "mark it again", s.MarkInboundFaxRead(ctx, f.ID, at(100)), core.ErrConflict)
	if got, _ := s.GetInboundFaxByID(ctx, f.ID); !got.ReadAt.Equal(first) {
		t.Fatalf("read_at moved from %v to %v", first, got.ReadAt)
	}
	wantErr(t, "mark an unknown fax", s.MarkInboundFaxRead(ctx, "inb_missing", at(5)), core.ErrNoRows)
}

// testLowBalanceThreshold: the threshold is kept on the balance row (set
// before any credit, changed, cleared, per mode), read with the balance,
// and returned with the balance a hold or a reversal leaves.
func testLowBalanceThreshold(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	threshold := func(mode core.Mode) *int64 {
		t.Helper()
		b, err := s.GetBalance(ctx, o.ID, mode)
		must(t, err)
		return b.ThresholdMicros
	}
	if threshold(core.ModeLive) != nil {
		t.Fatal("a threshold by default")
	}
	must(t, s.SetLowBalanceThreshold(ctx, o.ID, core.ModeLive, ptr[int64](5_000_000)))
	wantBalance(t, s, o, core.ModeLive, 0, 0)
	grant(t, s, o, core.ModeLive, 6_000_000)
	must(t, s.SetLowBalanceThreshold(ctx, o.ID, core.ModeLive, ptr[int64](4_000_000)))
	if got := threshold(core.ModeLive); got == nil || *got != 4_000_000 {
		t.Fatalf("threshold %v", got)
	}
	if threshold(core.ModeTest) != nil {
		t.Fatal("the live threshold set the test one")
	}
	doc := newDocument(t, s, o, core.ModeLive)
	fax := newFax(t, s, doc)
	h := holdFor(fax, 2_500_000)
	must(t, s.PlaceHold(ctx, h))
	wantEqual(t, "a hold's position", h.After, &credits.Position{AvailableMicros: 3_500_000, ThresholdMicros: ptr[int64](4_000_000)})
	wantBalance(t, s, o, core.ModeLive, 3_500_000, 2_500_000)
	must(t, s.SetLowBalanceThreshold(ctx, o.ID, core.ModeLive, nil))
	r := &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeLive, Kind: credits.LedgerReversal,
		AmountMicros: -1_000_000, Reason: "refund", CreatedAt: at(9)}
	took, err := s.ReverseCredits(ctx, r)
	must(t, err)
	if took != 1_000_000 {
		t.Fatalf("reversed %d", took)
	}
	wantEqual(t, "a reversal's position", r.After, &credits.Position{AvailableMicros: 2_500_000})
	wantBalance(t, s, o, core.ModeLive, 2_500_000, 2_500_000)
}

// testApprovalMode: an approval keeps its mode.
func testApprovalMode(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	for _, mode := range []core.Mode{core.ModeTest, core.ModeLive} {
		a := &approvals.Approval{ID: core.NewID(core.PrefixApproval), OwnerID: o.ID, Mode: mode, Kind: approvals.KindDevice,
			BindingHash: "h", Status: approvals.Pending, CreatedAt: at(0), ExpiresAt: at(600)}
		must(t, s.CreateApproval(ctx, a))
		got, err := s.GetApproval(ctx, o.ID, a.ID)
		must(t, err)
		if got.Mode != mode {
			t.Fatalf("approval mode %q, want %q", got.Mode, mode)
		}
		list, err := s.ListApprovals(ctx, o.ID, approvals.Pending, 0)
		must(t, err)
		for _, l := range list {
			if l.ID == a.ID && l.Mode != mode {
				t.Fatalf("listed approval mode %q, want %q", l.Mode, mode)
			}
		}
	}
}
