package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
)

// testMoveFax: a fax's move and what goes with it (its event, the attempt
// it starts, the attempt whose outcome it writes) are written together or
// not at all (one statement on PostgreSQL), in a transaction and outside
// one, and the event is marked for dispatch as AppendEvent marks it.
// moveWay runs a fax's move (fn) one way: outside a transaction or in one.
type moveWay struct {
	name string
	run  func(fn func(faxes.Queries) error) error
}

// moveWays are the ways a move is checked: outside a transaction, in one,
// and in one that commits after a refused move.
func moveWays(ctx context.Context, s services.Store) []moveWay {
	return []moveWay{
		{"outside a transaction", func(fn func(faxes.Queries) error) error { return fn(s) }},
		{"in a transaction", func(fn func(faxes.Queries) error) error {
			return inTx(ctx, s, func(tx services.Tx) error { return fn(tx) })
		}},
		// A caller may handle a refused move and commit the rest of its
		// transaction (a delivery that finds its fax taken by another
		// worker): the refused move must have written nothing.
		{"in a transaction that commits after the error", func(fn func(faxes.Queries) error) (err error) {
			txErr := inTx(ctx, s, func(tx services.Tx) error {
				err = fn(tx)
				if errors.Is(err, core.ErrConflict) || errors.Is(err, core.ErrNoRows) && strings.HasPrefix(err.Error(), "update fax") {
					return nil
				}
				return err
			})
			return cmp.Or(err, txErr)
		}},
	}
}

func testMoveFax(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	execSQL(t, s, fmt.Sprintf(`INSERT INTO webhook_endpoints (id, owner_id, mode, url, enabled, created_at, updated_at)
		VALUES ('%s', '%s', 'live', 'https://hooks.example/x', true, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`,
		core.NewID(core.PrefixWebhookEndpoint), o.ID))
	doc := newDocument(t, s, o, core.ModeLive)
	event := func(f *faxes.Fax, typ events.Type, sec int) *events.Event {
		e, err := events.NewEvent(o.ID, core.ModeLive, typ, f.ID, map[string]any{"id": f.ID, "status": f.Status}, at(sec))
		must(t, err)
		return e
	}
	wantEvent := func(what string, e *events.Event, written bool) {
		t.Helper()
		got, err := s.GetEvent(ctx, o.ID, core.ModeLive, e.ID)
		if !written {
			wantErr(t, what+": the event", err, core.ErrNoRows)
			return
		}
		must(t, err)
		if got.Type != e.Type || got.SubjectID != e.SubjectID || string(got.Data) != string(e.Data) || !got.CreatedAt.Equal(e.CreatedAt) || !got.Dispatch {
			t.Errorf("%s: event %+v, want %+v marked for dispatch", what, got, e)
		}
	}
	wantFax := func(what string, want *faxes.Fax) {
		t.Helper()
		got, err := s.GetFaxByID(ctx, want.ID)
		must(t, err)
		wantEqual(t, what, got, want)
	}
	wantAttempts := func(what string, faxID string, want ...faxes.Attempt) {
		t.Helper()
		got, err := s.ListAttempts(ctx, faxID)
		must(t, err)
		wantEqual(t, what+": attempts", got, append([]faxes.Attempt{}, want...))
	}
	for _, how := range moveWays(ctx, s) {
		move := func(m faxes.Move) error { return how.run(func(q faxes.Queries) error { return q.MoveFax(ctx, m) }) }
		fax := newFax(t, s, doc)
		sending := *fax
		sending.Status, sending.Attempts, sending.UpdatedAt, sending.FaxedSHA256, sending.FaxedPages = faxes.Sending, 1, at(10), "ab", 4
		e := event(&sending, events.FaxSending, 10)
		first := faxes.Attempt{ID: core.NewID(core.PrefixAttempt), FaxID: fax.ID, Number: 1, Provider: "simulated", Status: faxes.AttemptSending, StartedAt: at(10)}
		// Refused: a fax no longer as the caller read it (Move.Read), by
		// its attempts or by when it last moved, writes nothing.
		for _, changed := range []func(f *faxes.Fax){
			func(f *faxes.Fax) { f.Attempts++ },
			func(f *faxes.Fax) { f.UpdatedAt = f.UpdatedAt.Add(time.Microsecond) },
		} {
			read := *fax
			changed(&read)
			err := move(faxes.Move{Fax: &sending, From: []faxes.Status{faxes.Queued}, Event: e, Started: &first, Read: &read})
			wantErr(t, how.name+": a fax not as read", err, core.ErrConflict)
			wantFax(how.name+": a fax not as read", fax)
			wantEvent(how.name+": a fax not as read", e, false)
			if got, err := s.ListAttempts(ctx, fax.ID); err != nil || len(got) != 0 {
				t.Errorf("%s: a fax not as read: attempts %+v, %v; want none", how.name, got, err)
			}
		}
		must(t, move(faxes.Move{Fax: &sending, From: []faxes.Status{faxes.Queued, faxes.Scheduled}, Event: e, Started: &first, Read: fax}))
		wantFax(how.name+": moved to sending", &sending)
		wantEvent(how.name+": moved to sending", e, true)
		wantAttempts(how.name+": moved to sending", fax.ID, first)

		// Refused: a fax not in a From status, or missing, writes nothing.
		stale := sending
		stale.Status, stale.UpdatedAt = faxes.Delivered, at(20)
		late := event(&stale, events.FaxDelivered, 20)
		report := first
		report.Status, report.ProviderRef, report.PagesSent, report.DurationMS, report.FinishedAt = faxes.AttemptDelivered, "ref-1", 4, 900, ptr(at(20))
		second := faxes.Attempt{ID: core.NewID(core.PrefixAttempt), FaxID: fax.ID, Number: 2, Provider: "simulated", Status: faxes.AttemptSending, StartedAt: at(20)}
		err := move(faxes.Move{Fax: &stale, From: []faxes.Status{faxes.Queued}, Event: late, Started: &second, Updated: &report})
		wantErr(t, how.name+": from a status it is not in", err, core.ErrConflict)
		wantFax(how.name+": after the refused move", &sending)
		wantEvent(how.name+": refused move", late, false)
		wantAttempts(how.name+": refused move", fax.ID, first)

		missing := stale
		missing.ID = "fax_missing"
		lost := event(&missing, events.FaxDelivered, 21)
		err = move(faxes.Move{Fax: &missing, From: []faxes.Status{faxes.Sending}, Event: lost})
		wantErr(t, how.name+": a missing fax", err, core.ErrNoRows)
		wantEvent(how.name+": a missing fax", lost, false)

		// What goes with a move failing takes the move back: an attempt id
		// taken, an updated attempt missing.
		taken := first
		err = move(faxes.Move{Fax: &stale, From: []faxes.Status{faxes.Sending}, Event: late, Started: &taken})
		wantErr(t, how.name+": an attempt id taken", err, core.ErrExists)
		gone := report
		gone.ID = "att_missing"
		err = move(faxes.Move{Fax: &stale, From: []faxes.Status{faxes.Sending}, Event: late, Updated: &gone})
		wantErr(t, how.name+": an updated attempt missing", err, core.ErrNoRows)
		wantFax(how.name+": after the failed moves", &sending)
		wantEvent(how.name+": failed moves", late, false)
		wantAttempts(how.name+": failed moves", fax.ID, first)

		// The outcome: the fax, its event and the attempt's report.
		done := sending
		done.Status, done.PagesSent, done.CompletedAt, done.UpdatedAt = faxes.Delivered, 4, ptr(at(30)), at(30)
		delivered := event(&done, events.FaxDelivered, 30)
		must(t, move(faxes.Move{Fax: &done, From: []faxes.Status{faxes.Sending}, Event: delivered, Updated: &report, Read: &sending}))
		wantFax(how.name+": delivered", &done)
		wantEvent(how.name+": delivered", delivered, true)
		wantAttempts(how.name+": delivered", fax.ID, report)

		// Nothing with it: UpdateFax.
		again := done
		again.UpdatedAt = at(40)
		must(t, move(faxes.Move{Fax: &again, From: []faxes.Status{faxes.Delivered}}))
		wantFax(how.name+": updated alone", &again)
	}
}

// testMoveFaxSettles checks a move that settles its fax's credit hold
// (Move.Settle): the move, its attempt's outcome and the ledger entry are
// written together or not at all, whether the move or the settlement is
// what fails, each way of moveWays.
func testMoveFaxSettles(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeLive)
	grant(t, s, o, core.ModeLive, 10_000_000)
	for _, how := range moveWays(ctx, s) {
		move := func(m faxes.Move) error { return how.run(func(q faxes.Queries) error { return q.MoveFax(ctx, m) }) }
		// sending returns a fax sending its first attempt, with a hold
		// of 1 credit (hold: false, none), and that attempt.
		sending := func(hold bool) (*faxes.Fax, *faxes.Attempt) {
			fax := newFax(t, s, doc)
			if hold {
				must(t, s.PlaceHold(ctx, holdFor(fax, 1_000_000)))
			}
			started := *fax
			started.Status, started.Attempts, started.UpdatedAt = faxes.Sending, 1, at(10)
			a := &faxes.Attempt{ID: core.NewID(core.PrefixAttempt), FaxID: fax.ID, Number: 1, Provider: "simulated", Status: faxes.AttemptSending, StartedAt: at(10)}
			must(t, s.MoveFax(ctx, faxes.Move{Fax: &started, From: []faxes.Status{faxes.Queued}, Started: a, Read: fax}))
			return &started, a
		}
		// ended is the move of fax, sending, to status with its attempt
		// ended and the hold settled by kind.
		ended := func(fax *faxes.Fax, a *faxes.Attempt, status faxes.Status, kind credits.LedgerKind) (faxes.Move, *faxes.Fax, *faxes.Attempt) {
			done, report := *fax, *a
			done.Status, done.CompletedAt, done.UpdatedAt = status, ptr(at(30)), at(30)
			report.Status, report.FinishedAt = faxes.AttemptDelivered, ptr(at(30))
			if status != faxes.Delivered {
				report.Status, report.FailureCode = faxes.AttemptFailed, "busy"
			}
			e, err := events.NewEvent(o.ID, core.ModeLive, events.FaxDelivered, fax.ID, map[string]any{"id": fax.ID, "status": status}, at(30))
			must(t, err)
			return faxes.Move{Fax: &done, From: []faxes.Status{faxes.Sending}, Event: e, Updated: &report, Read: fax, Settle: kind}, &done, &report
		}
		unchanged := func(what string, m faxes.Move, fax *faxes.Fax, a *faxes.Attempt, available, held int64) {
			t.Helper()
			got, err := s.GetFaxByID(ctx, fax.ID)
			must(t, err)
			wantEqual(t, how.name+": "+what+": the fax", got, fax)
			_, err = s.GetEvent(ctx, o.ID, core.ModeLive, m.Event.ID)
			wantErr(t, how.name+": "+what+": the event", err, core.ErrNoRows)
			attempts, err := s.ListAttempts(ctx, fax.ID)
			must(t, err)
			wantEqual(t, how.name+": "+what+": the attempts", attempts, []faxes.Attempt{*a})
			wantBalance(t, s, o, core.ModeLive, available, held)
		}
		b := consistentBalance(t, s, o, core.ModeLive)
		available, held := b.AvailableMicros, b.HeldMicros

		// Delivered: captured with the move.
		fax, a := sending(true)
		held += 1_000_000
		available -= 1_000_000
		m, done, report := ended(fax, a, faxes.Delivered, credits.LedgerCapture)
		must(t, move(m))
		got, err := s.GetFaxByID(ctx, fax.ID)
		must(t, err)
		wantEqual(t, how.name+": delivered", got, done)
		attempts, err := s.ListAttempts(ctx, fax.ID)
		must(t, err)
		wantEqual(t, how.name+": delivered: the attempts", attempts, []faxes.Attempt{*report})
		held -= 1_000_000
		wantBalance(t, s, o, core.ModeLive, available, held)
		entries, err := s.ListLedger(ctx, credits.LedgerFilter{OwnerID: o.ID, Mode: core.ModeLive})
		must(t, err)
		captured := slices.ContainsFunc(entries, func(e credits.LedgerEntry) bool {
			return e.Kind == credits.LedgerCapture && e.FaxID != nil && *e.FaxID == fax.ID && e.CreatedAt.Equal(at(30))
		})
		if !captured {
			t.Errorf("%s: delivered: no capture of fax %s dated its move in %+v", how.name, fax.ID, entries)
		}
		// Settled already: the move is refused whole.
		again, _, _ := ended(done, report, faxes.Failed, credits.LedgerRelease)
		again.From, again.Read = []faxes.Status{faxes.Delivered}, done
		wantErr(t, how.name+": a hold settled already", move(again), faxes.ErrHoldNotSettled)
		got, err = s.GetFaxByID(ctx, fax.ID)
		must(t, err)
		wantEqual(t, how.name+": after a hold settled already", got, done)
		wantBalance(t, s, o, core.ModeLive, available, held)

		// Failed: released with the move.
		fax, a = sending(true)
		m, _, _ = ended(fax, a, faxes.Failed, credits.LedgerRelease)
		must(t, move(m))
		wantBalance(t, s, o, core.ModeLive, available, held)

		// Refused by the fax's status or as read: nothing settled.
		fax, a = sending(true)
		held += 1_000_000
		available -= 1_000_000
		m, _, _ = ended(fax, a, faxes.Delivered, credits.LedgerCapture)
		m.From = []faxes.Status{faxes.Queued}
		wantErr(t, how.name+": from a status it is not in", move(m), core.ErrConflict)
		unchanged("from a status it is not in", m, fax, a, available, held)
		m.From, m.Read = []faxes.Status{faxes.Sending}, done
		wantErr(t, how.name+": not as read", move(m), core.ErrConflict)
		unchanged("not as read", m, fax, a, available, held)

		// No hold: the move, its event and its attempt's outcome are
		// taken back.
		fax, a = sending(false)
		m, _, _ = ended(fax, a, faxes.Delivered, credits.LedgerCapture)
		wantErr(t, how.name+": no hold", move(m), faxes.ErrHoldNotSettled)
		unchanged("no hold", m, fax, a, available, held)
	}
}

func testFaxes(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeLive)
	fax := faxOf(doc, at(2))
	fax.Cover, fax.CoverText = true, "Attn: Claims"
	// The door it came in by is kept as written, names in any script.
	fax.SentBy = faxes.SentBy{Kind: core.PrincipalOAuthGrant, ID: "grant_01", Name: "Claude — ファックス"}
	must(t, s.CreateFax(ctx, fax))
	wantErr(t, "fax with a taken id", s.CreateFax(ctx, fax), core.ErrExists)

	get := func(what string, want *faxes.Fax) {
		t.Helper()
		got, err := s.GetFax(ctx, o.ID, core.ModeLive, fax.ID)
		must(t, err)
		wantEqual(t, what+" (GetFax)", got, want)
		got, err = s.GetFaxByID(ctx, fax.ID)
		must(t, err)
		wantEqual(t, what+" (GetFaxByID)", got, want)
	}
	get("created fax", fax)
	_, err := s.GetFax(ctx, o.ID, core.ModeTest, fax.ID)
	wantErr(t, "GetFax in the other mode", err, core.ErrNoRows)
	_, err = s.GetFax(ctx, other.ID, core.ModeLive, fax.ID)
	wantErr(t, "GetFax of another owner", err, core.ErrNoRows)
	_, err = s.GetFaxByID(ctx, "fax_missing")
	wantErr(t, "GetFaxByID of a missing fax", err, core.ErrNoRows)

	// queued → sending
	next := *fax
	next.Status, next.Attempts, next.UpdatedAt = faxes.Sending, 1, at(10)
	must(t, s.UpdateFax(ctx, &next, faxes.Queued))
	get("sending fax", &next)
	wantErr(t, "UpdateFax from a status it is not in", s.UpdateFax(ctx, &next, faxes.Queued), core.ErrConflict)

	// sending → queued with a retry scheduled; several from states allowed
	next.Status, next.FailureCode, next.FailureReason, next.NextAttemptAt, next.UpdatedAt = faxes.Queued, "busy", "line busy", ptr(at(40)), at(11)
	must(t, s.UpdateFax(ctx, &next, faxes.Queued, faxes.Sending))
	get("queued for retry", &next)

	// queued → delivered: nullable fields set and cleared, immutable
	// fields left alone even if the caller's copy differs.
	next.Status, next.PagesSent, next.Attempts, next.CompletedAt, next.NextAttemptAt = faxes.Delivered, 3, 2, ptr(at(50)), nil
	next.FailureCode, next.FailureReason, next.UpdatedAt = "", "", at(50)
	changed := next
	changed.PriceMicros, changed.To, changed.Pages = 1, "+442079460000", 99
	must(t, s.UpdateFax(ctx, &changed, faxes.Queued))
	get("delivered fax", &next)

	missing := next
	missing.ID = "fax_missing"
	wantErr(t, "UpdateFax of a missing fax", s.UpdateFax(ctx, &missing, faxes.Delivered), core.ErrNoRows)

	// The document as faxed: a fax keeps the first one recorded.
	must(t, s.SetFaxedDocument(ctx, fax.ID, "aa", 4))
	must(t, s.SetFaxedDocument(ctx, fax.ID, "bb", 5))
	next.FaxedSHA256, next.FaxedPages = "aa", 4
	get("fax with its document as faxed", &next)
	// Every fax of a document is listed for its purge, with a document as
	// faxed recorded or not (its blob may be there without a row naming
	// it); another document's are not.
	unfaxed := faxOf(doc, at(60))
	must(t, s.CreateFax(ctx, unfaxed))
	// UpdateFax records the document as faxed as SetFaxedDocument does:
	// on a fax without one, keeping the first.
	for _, tc := range []struct {
		name         string
		sha          string
		pages        int
		wantSHA      string
		wantPages    int
		from, status faxes.Status
	}{
		{"without a document as faxed", "", 7, "", 0, faxes.Queued, faxes.Sending},
		{"recording the first", "cc", 6, "cc", 6, faxes.Sending, faxes.Queued},
		{"with another", "dd", 8, "cc", 6, faxes.Queued, faxes.Sending},
		{"with none given", "", 0, "cc", 6, faxes.Sending, faxes.Queued},
	} {
		u := *unfaxed
		u.Status, u.FaxedSHA256, u.FaxedPages = tc.status, tc.sha, tc.pages
		must(t, s.UpdateFax(ctx, &u, tc.from))
		got, err := s.GetFaxByID(ctx, unfaxed.ID)
		must(t, err)
		if got.Status != tc.status || got.FaxedSHA256 != tc.wantSHA || got.FaxedPages != tc.wantPages {
			t.Fatalf("UpdateFax %s: status %s, document as faxed %q of %d pages; want %s, %q of %d",
				tc.name, got.Status, got.FaxedSHA256, got.FaxedPages, tc.status, tc.wantSHA, tc.wantPages)
		}
	}
	must(t, s.CreateFax(ctx, faxOf(newDocument(t, s, o, core.ModeLive), at(61))))
	ofDoc, err := s.FaxedOfDocument(ctx, doc.ID)
	must(t, err)
	ids := []string{}
	for _, f := range ofDoc {
		ids = append(ids, f.ID)
	}
	slices.Sort(ids)
	want := []string{fax.ID, unfaxed.ID}
	slices.Sort(want)
	wantEqual(t, "FaxedOfDocument", ids, want)
}

// testFaxWithDocument reads a fax with what composing it needs: its
// document and its owner's settings (zero without), in and outside a
// transaction; a fax whose document is purged reads as missing.
func testFaxWithDocument(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeTest)
	fax := newFax(t, s, doc)
	mine := faxes.Settings{TimeZone: "Europe/Paris", Header: "Cabinet Martin", Sender: faxes.Sender{Name: "Anne Martin", Fax: "+33142685300"}}

	for _, tc := range []struct {
		name  string
		setup func()
		want  faxes.Settings
	}{
		{"without settings", func() {}, faxes.Settings{}},
		{"without settings, another owner's set", func() {
			must(t, s.PutFaxSettings(ctx, other.ID, faxes.Settings{Header: "not mine"}, at(3)))
		}, faxes.Settings{}},
		{"with settings", func() { must(t, s.PutFaxSettings(ctx, o.ID, mine, at(4))) }, mine},
	} {
		tc.setup()
		for _, q := range outsideAndInTx(ctx, s) {
			must(t, q.run(func(tx services.Tx) error {
				gotFax, gotDoc, gotSettings, err := tx.FaxWithDocument(ctx, fax.ID)
				must(t, err)
				wantEqual(t, "FaxWithDocument's fax "+tc.name+q.name, gotFax, fax)
				wantEqual(t, "FaxWithDocument's document "+tc.name+q.name, gotDoc, doc)
				wantEqual(t, "FaxWithDocument's settings "+tc.name+q.name, gotSettings, tc.want)
				return nil
			}))
		}
	}

	_, _, _, err := s.FaxWithDocument(ctx, "fax_missing")
	wantErr(t, "FaxWithDocument of a missing fax", err, core.ErrNoRows)
	done := *fax
	done.Status, done.CompletedAt, done.UpdatedAt = faxes.Delivered, ptr(at(5)), at(5)
	must(t, s.UpdateFax(ctx, &done, faxes.Queued))
	must(t, s.MarkDocumentPurged(ctx, doc.ID, at(1_000_000), at(1_000_000), at(1_000_000)))
	_, _, _, err = s.FaxWithDocument(ctx, fax.ID)
	wantErr(t, "FaxWithDocument of a fax whose document is purged", err, core.ErrNoRows)
}

func testListFaxes(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	live, test := newDocument(t, s, o, core.ModeLive), newDocument(t, s, o, core.ModeTest)
	var mine []faxes.Fax
	for i := range 25 {
		// Three faxes share each instant, so the id breaks ties.
		ord := faxOf(live, at(100+i/3))
		if i%4 == 0 {
			ord.Status = faxes.Delivered
		}
		must(t, s.CreateFax(ctx, ord))
		mine = append(mine, *ord)
	}
	for range 2 {
		must(t, s.CreateFax(ctx, faxOf(test, at(200))))
		must(t, s.CreateFax(ctx, faxOf(newDocument(t, s, other, core.ModeLive), at(200))))
	}
	slices.SortFunc(mine, func(a, b faxes.Fax) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	delivered := slices.DeleteFunc(slices.Clone(mine), func(o faxes.Fax) bool { return o.Status != faxes.Delivered })

	// A period: created_at in [from, to) (mine[i] were made at 100+i/3
	// seconds; from 103 to 106 holds the faxes of 103, 104 and 105).
	from, to := at(103), at(106)
	period := slices.DeleteFunc(slices.Clone(mine), func(o faxes.Fax) bool { return o.CreatedAt.Before(from) || !o.CreatedAt.Before(to) })
	deliveredInPeriod := slices.DeleteFunc(slices.Clone(period), func(o faxes.Fax) bool { return o.Status != faxes.Delivered })
	if len(period) != 9 || len(deliveredInPeriod) == 0 {
		t.Fatalf("fixture: %d faxes in the period, %d delivered", len(period), len(deliveredInPeriod))
	}
	for _, tc := range []struct {
		name     string
		status   faxes.Status
		from, to *time.Time
		limit    int
		want     []faxes.Fax
	}{
		{"all, pages of 7", "", nil, nil, 7, mine},
		{"all, pages of 1", "", nil, nil, 1, mine},
		{"all, one page", "", nil, nil, 0, mine},
		{"delivered, pages of 2", faxes.Delivered, nil, nil, 2, delivered},
		{"failed, none", faxes.Failed, nil, nil, 5, nil},
		{"a period, pages of 4", "", &from, &to, 4, period},
		{"a period, delivered", faxes.Delivered, &from, &to, 2, deliveredInPeriod},
		{"from only", "", &to, nil, 0, slices.DeleteFunc(slices.Clone(mine), func(o faxes.Fax) bool { return o.CreatedAt.Before(to) })},
		{"to only", "", nil, &from, 0, slices.DeleteFunc(slices.Clone(mine), func(o faxes.Fax) bool { return !o.CreatedAt.Before(from) })},
		{"an empty period", "", &to, &to, 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []faxes.Fax
			after := ""
			for page := 0; ; page++ {
				if page > len(mine)+1 {
					t.Fatal("pagination does not end")
				}
				p, err := s.ListFaxes(ctx, faxes.Filter{OwnerID: o.ID, Mode: core.ModeLive, Status: tc.status, CreatedFrom: tc.from, CreatedTo: tc.to,
					StartingAfter: after, Limit: tc.limit})
				must(t, err)
				if tc.limit > 0 && len(p) > tc.limit {
					t.Fatalf("page of %d faxes with limit %d", len(p), tc.limit)
				}
				got = append(got, p...)
				if len(p) == 0 || tc.limit == 0 || len(p) < tc.limit {
					break
				}
				after = p[len(p)-1].ID
			}
			wantEqual(t, "faxes, newest first", got, tc.want)
		})
	}

	_, err := s.ListFaxes(ctx, faxes.Filter{OwnerID: o.ID, Mode: core.ModeLive, StartingAfter: "fax_missing", Limit: 5})
	wantErr(t, "ListFaxes after a missing fax", err, core.ErrNoRows)
	_, err = s.ListFaxes(ctx, faxes.Filter{OwnerID: other.ID, Mode: core.ModeLive, StartingAfter: mine[0].ID, Limit: 5})
	wantErr(t, "ListFaxes after another owner's fax", err, core.ErrNoRows)
	got, err := s.ListFaxes(ctx, faxes.Filter{OwnerID: o.ID, Mode: core.ModeTest, Limit: 10})
	must(t, err)
	if len(got) != 2 {
		t.Fatalf("test-mode faxes: got %d, want 2", len(got))
	}
}

func testAttempts(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	fax := newFax(t, s, newDocument(t, s, o, core.ModeTest))

	// FaxWithLatestAttempt reads what GetFaxByID and LatestAttempt read,
	// outside a transaction and in one.
	withLatest := func(what string, want *faxes.Attempt) {
		t.Helper()
		for _, q := range outsideAndInTx(ctx, s) {
			must(t, q.run(func(tx services.Tx) error {
				got, a, err := tx.FaxWithLatestAttempt(ctx, fax.ID)
				must(t, err)
				wantEqual(t, "FaxWithLatestAttempt's fax "+what+q.name, got, fax)
				wantEqual(t, "FaxWithLatestAttempt's attempt "+what+q.name, a, want)
				return nil
			}))
		}
	}

	_, err := s.LatestAttempt(ctx, fax.ID)
	wantErr(t, "LatestAttempt without attempts", err, core.ErrNoRows)
	_, _, err = s.FaxWithLatestAttempt(ctx, fax.ID)
	wantErr(t, "FaxWithLatestAttempt without attempts", err, core.ErrNoRows)
	_, _, err = s.FaxWithLatestAttempt(ctx, "fax_missing")
	wantErr(t, "FaxWithLatestAttempt of a missing fax", err, core.ErrNoRows)
	list, err := s.ListAttempts(ctx, fax.ID)
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("ListAttempts without attempts: %d", len(list))
	}

	a1 := &faxes.Attempt{ID: core.NewID(core.PrefixAttempt), FaxID: fax.ID, Number: 1, Provider: "simulated", Status: faxes.AttemptSending, StartedAt: at(10)}
	must(t, s.CreateAttempt(ctx, a1))
	latest, err := s.LatestAttempt(ctx, fax.ID)
	must(t, err)
	wantEqual(t, "LatestAttempt", latest, a1)
	withLatest("with one attempt", a1)

	a1.Status, a1.ProviderRef, a1.FailureCode, a1.FailureReason = faxes.AttemptFailed, "sim_123", "busy", "line busy"
	a1.Retryable, a1.PagesSent, a1.DurationMS, a1.FinishedAt = true, 1, 4200, ptr(at(15))
	must(t, s.UpdateAttempt(ctx, a1))

	a2 := &faxes.Attempt{ID: core.NewID(core.PrefixAttempt), FaxID: fax.ID, Number: 2, Provider: "simulated", Status: faxes.AttemptSending, StartedAt: at(45)}
	must(t, s.CreateAttempt(ctx, a2))
	latest, err = s.LatestAttempt(ctx, fax.ID)
	must(t, err)
	wantEqual(t, "LatestAttempt after a retry", latest, a2)
	withLatest("after a retry", a2)
	list, err = s.ListAttempts(ctx, fax.ID)
	must(t, err)
	wantEqual(t, "ListAttempts, first first", list, []faxes.Attempt{*a1, *a2})

	dup := *a2
	dup.ID = core.NewID(core.PrefixAttempt)
	wantErr(t, "attempt with a taken number", s.CreateAttempt(ctx, &dup), core.ErrExists)
	wantErr(t, "attempt with a taken id", s.CreateAttempt(ctx, a2), core.ErrExists)
	missing := *a2
	missing.ID = "att_missing"
	wantErr(t, "UpdateAttempt of a missing attempt", s.UpdateAttempt(ctx, &missing), core.ErrNoRows)
}
