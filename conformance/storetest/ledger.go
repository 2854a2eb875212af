package storetest

import (
	"cmp"
	"errors"
	"slices"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
)

// wantBalance checks the cached balance against want, and against the
// ledger (see consistentBalance).
func wantBalance(t *testing.T, s services.Store, o *accounts.Owner, mode core.Mode, available, held int64) {
	t.Helper()
	b := consistentBalance(t, s, o, mode)
	if b.AvailableMicros != available || b.HeldMicros != held {
		t.Fatalf("balance %s: available %d held %d, want available %d held %d", mode, b.AvailableMicros, b.HeldMicros, available, held)
	}
}

// consistentBalance returns the cached balance after checking it against
// the ledger itself: available is the sum of all entries, held the amount of
// the holds not yet settled, and no hold is settled twice.
func consistentBalance(t *testing.T, s services.Store, o *accounts.Owner, mode core.Mode) *credits.Balance {
	t.Helper()
	b, err := s.GetBalance(t.Context(), o.ID, mode)
	must(t, err)
	if b.Mode != mode {
		t.Fatalf("balance mode %q, want %q", b.Mode, mode)
	}
	entries, err := s.ListLedger(t.Context(), credits.LedgerFilter{OwnerID: o.ID, Mode: mode})
	must(t, err)
	var sum, open int64
	settled := map[string]bool{}
	for _, e := range entries {
		sum += e.AmountMicros
		if e.Kind == credits.LedgerCapture || e.Kind == credits.LedgerRelease {
			if e.HoldID == nil {
				t.Fatalf("%s entry %s names no hold", e.Kind, e.ID)
			}
			if settled[*e.HoldID] {
				t.Fatalf("hold %s settled twice", *e.HoldID)
			}
			settled[*e.HoldID] = true
		}
	}
	for _, e := range entries {
		if e.Kind == credits.LedgerHold && !settled[e.ID] {
			open -= e.AmountMicros
		}
	}
	if sum != b.AvailableMicros || open != b.HeldMicros || b.AvailableMicros < 0 || b.HeldMicros < 0 {
		t.Fatalf("balance %s: cached available %d held %d, but the ledger sums to %d with %d held", mode, b.AvailableMicros, b.HeldMicros, sum, open)
	}
	return b
}

func testLedger(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeLive)
	created := make([]*faxes.Fax, 5)
	for i := range created {
		created[i] = newFax(t, s, doc)
	}

	wantBalance(t, s, o, core.ModeLive, 0, 0)
	wantBalance(t, s, newOwner(t, s), core.ModeTest, 0, 0)

	grant(t, s, o, core.ModeLive, 10_000_000)
	wantBalance(t, s, o, core.ModeLive, 10_000_000, 0)
	wantBalance(t, s, o, core.ModeTest, 0, 0)

	h0 := holdFor(created[0], 3_000_000)
	must(t, s.PlaceHold(ctx, h0))
	wantBalance(t, s, o, core.ModeLive, 7_000_000, 3_000_000)

	wantErr(t, "hold larger than the balance", s.PlaceHold(ctx, holdFor(created[1], 7_000_001)), core.ErrInsufficientFunds)
	wantErr(t, "hold in a mode without credits", s.PlaceHold(ctx, func() *credits.LedgerEntry {
		o := faxOf(newDocument(t, s, o, core.ModeTest), at(2))
		must(t, s.CreateFax(ctx, o))
		return holdFor(o, 1)
	}()), core.ErrInsufficientFunds)
	wantErr(t, "second hold for one fax", s.PlaceHold(ctx, holdFor(created[0], 1_000)), core.ErrExists)
	wantBalance(t, s, o, core.ModeLive, 7_000_000, 3_000_000)
	_, err := s.SettleHold(ctx, created[1].ID, credits.LedgerRelease, at(9))
	wantErr(t, "SettleHold of a refused hold", err, core.ErrNoRows)

	capture, err := s.SettleHold(ctx, created[0].ID, credits.LedgerCapture, at(20))
	must(t, err)
	if capture.Kind != credits.LedgerCapture || capture.AmountMicros != 0 || capture.HoldID == nil || *capture.HoldID != h0.ID ||
		capture.FaxID == nil || *capture.FaxID != created[0].ID || capture.OwnerID != o.ID || capture.Mode != core.ModeLive ||
		!capture.CreatedAt.Equal(at(20)) || capture.ID == "" {
		t.Fatalf("capture entry: %s", dump(capture))
	}
	wantBalance(t, s, o, core.ModeLive, 7_000_000, 0)
	_, err = s.SettleHold(ctx, created[0].ID, credits.LedgerRelease, at(21))
	wantErr(t, "release after capture", err, core.ErrConflict)
	_, err = s.SettleHold(ctx, created[0].ID, credits.LedgerCapture, at(21))
	wantErr(t, "capture twice", err, core.ErrConflict)
	wantBalance(t, s, o, core.ModeLive, 7_000_000, 0)

	h2 := holdFor(created[2], 7_000_000) // exactly the balance
	must(t, s.PlaceHold(ctx, h2))
	wantBalance(t, s, o, core.ModeLive, 0, 7_000_000)
	release, err := s.SettleHold(ctx, created[2].ID, credits.LedgerRelease, at(30))
	must(t, err)
	if release.Kind != credits.LedgerRelease || release.AmountMicros != 7_000_000 || release.HoldID == nil || *release.HoldID != h2.ID {
		t.Fatalf("release entry: %s", dump(release))
	}
	wantBalance(t, s, o, core.ModeLive, 7_000_000, 0)

	// A partial delivery's refund, and a purchase.
	for _, e := range []*credits.LedgerEntry{
		{ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeLive, Kind: credits.LedgerRefund, AmountMicros: 70_000, FaxID: &created[0].ID, Reason: "2 pages not sent", CreatedAt: at(40)},
		{ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeLive, Kind: credits.LedgerPurchase, AmountMicros: 25_000_000, Reason: "pack", CreatedAt: at(41)},
	} {
		must(t, s.AppendLedger(ctx, e))
	}
	wantBalance(t, s, o, core.ModeLive, 32_070_000, 0)

	// A capture appended directly names its hold.
	h3 := holdFor(created[3], 2_000_000)
	must(t, s.PlaceHold(ctx, h3))
	must(t, s.AppendLedger(ctx, &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeLive, Kind: credits.LedgerCapture, HoldID: &h3.ID, Reason: "delivered", CreatedAt: at(50)}))
	wantBalance(t, s, o, core.ModeLive, 30_070_000, 0)
	_, err = s.SettleHold(ctx, created[3].ID, credits.LedgerRelease, at(51))
	wantErr(t, "SettleHold of a hold captured through AppendLedger", err, core.ErrConflict)
	wantErr(t, "AppendLedger capture of a settled hold",
		s.AppendLedger(ctx, &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeLive, Kind: credits.LedgerRelease, AmountMicros: 2_000_000, HoldID: &h3.ID, CreatedAt: at(52)}),
		core.ErrConflict)

	// Malformed entries are refused and change nothing.
	for name, e := range map[string]*credits.LedgerEntry{
		"hold through AppendLedger": {Kind: credits.LedgerHold, AmountMicros: -1},
		"zero grant":                {Kind: credits.LedgerGrant, AmountMicros: 0},
		"negative refund":           {Kind: credits.LedgerRefund, AmountMicros: -5},
		"capture without a hold":    {Kind: credits.LedgerCapture},
		"unknown kind":              {Kind: "bonus", AmountMicros: 5},
	} {
		e.ID, e.OwnerID, e.Mode, e.CreatedAt = core.NewID(core.PrefixLedger), o.ID, core.ModeLive, at(60)
		if err := s.AppendLedger(ctx, e); err == nil {
			t.Errorf("AppendLedger of a %s: want an error", name)
		}
	}
	if err := s.PlaceHold(ctx, &credits.LedgerEntry{ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeLive, Kind: credits.LedgerHold, AmountMicros: 5, FaxID: &created[4].ID, CreatedAt: at(60)}); err == nil || errors.Is(err, core.ErrInsufficientFunds) {
		t.Errorf("PlaceHold of a positive amount: got %v, want a plain error", err)
	}
	grantDup := grant(t, s, o, core.ModeLive, 1)
	wantErr(t, "entry with a taken id", s.AppendLedger(ctx, grantDup), core.ErrExists)
	wantBalance(t, s, o, core.ModeLive, 30_070_001, 0)
	_, err = s.SettleHold(ctx, "fax_missing", credits.LedgerCapture, at(70))
	wantErr(t, "SettleHold of a fax without a hold", err, core.ErrNoRows)

	// A hold inside a transaction that rolls back leaves nothing.
	rollback := errors.New("roll back")
	err = inTx(ctx, s, func(tx services.Tx) error {
		if err := tx.PlaceHold(ctx, holdFor(created[4], 1_000_000)); err != nil {
			return err
		}
		return rollback
	})
	wantErr(t, "InTx", err, rollback)
	wantBalance(t, s, o, core.ModeLive, 30_070_001, 0)
}

func testListLedger(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	var mine []credits.LedgerEntry
	for i := range 11 {
		e := &credits.LedgerEntry{
			ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: core.ModeTest, Kind: credits.LedgerGrant,
			AmountMicros: int64(1000 + i), Reason: "grant", CreatedAt: at(i / 2),
		}
		must(t, s.AppendLedger(ctx, e))
		mine = append(mine, *e)
	}
	grant(t, s, o, core.ModeLive, 5)
	grant(t, s, other, core.ModeTest, 5)
	slices.SortFunc(mine, func(a, b credits.LedgerEntry) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})

	var got []credits.LedgerEntry
	after := ""
	for range 10 {
		p, err := s.ListLedger(ctx, credits.LedgerFilter{OwnerID: o.ID, Mode: core.ModeTest, StartingAfter: after, Limit: 3})
		must(t, err)
		if len(p) > 3 {
			t.Fatalf("page of %d entries with limit 3", len(p))
		}
		got = append(got, p...)
		if len(p) < 3 {
			break
		}
		after = p[len(p)-1].ID
	}
	wantEqual(t, "ledger, newest first", got, mine)

	all, err := s.ListLedger(ctx, credits.LedgerFilter{OwnerID: o.ID, Mode: core.ModeTest})
	must(t, err)
	wantEqual(t, "ledger without a limit", all, mine)

	for name, f := range map[string]credits.LedgerFilter{
		"a missing entry":          {OwnerID: o.ID, Mode: core.ModeTest, StartingAfter: "led_missing", Limit: 3},
		"an entry of another mode": {OwnerID: o.ID, Mode: core.ModeLive, StartingAfter: mine[0].ID, Limit: 3},
		"another owner's entry":    {OwnerID: other.ID, Mode: core.ModeTest, StartingAfter: mine[0].ID, Limit: 3},
	} {
		_, err := s.ListLedger(ctx, f)
		wantErr(t, "ListLedger after "+name, err, core.ErrNoRows)
	}
}

// testLedgerConcurrent races holds against a balance that covers only some
// of them, then races captures and releases of each hold.
func testLedgerConcurrent(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeLive)
	const price, covered, spare = 1_000_000, 10, 500_000
	grant(t, s, o, core.ModeLive, covered*price+spare)
	created := make([]*faxes.Fax, concurrency)
	for i := range created {
		created[i] = newFax(t, s, doc)
	}

	// Readers watch the balance while holds race; it must never go
	// negative.
	stop := make(chan struct{})
	watchErr := make(chan error, 1)
	go func() {
		defer close(watchErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := s.GetBalance(ctx, o.ID, core.ModeLive)
			if err != nil {
				watchErr <- err
				return
			}
			if b.AvailableMicros < 0 || b.HeldMicros < 0 || b.AvailableMicros+b.HeldMicros != covered*price+spare {
				watchErr <- errors.New("inconsistent balance " + dump(b))
				return
			}
		}
	}()

	errs := race(concurrency, func(i int) error {
		h := holdFor(created[i], price)
		if i%2 == 0 {
			return s.PlaceHold(ctx, h)
		}
		return inTx(ctx, s, func(tx services.Tx) error { return tx.PlaceHold(ctx, h) })
	})
	close(stop)
	if err := <-watchErr; err != nil {
		t.Fatalf("balance watcher: %v", err)
	}
	ok, refused := countErrs(t, "PlaceHold", errs, core.ErrInsufficientFunds)
	if ok != covered || refused != concurrency-covered {
		t.Fatalf("PlaceHold: %d placed and %d refused, want %d and %d", ok, refused, covered, concurrency-covered)
	}
	wantBalance(t, s, o, core.ModeLive, spare, covered*price)

	// Each held fax gets five racing settlements, captures and releases
	// mixed; exactly one per hold may win.
	const per = 5
	var held []*faxes.Fax
	for i, err := range errs {
		if err == nil {
			held = append(held, created[i])
		}
	}
	type result struct {
		e   *credits.LedgerEntry
		err error
	}
	results := make([]result, len(held)*per)
	errs = race(len(results), func(i int) error {
		kind := credits.LedgerCapture
		if i%2 == 1 {
			kind = credits.LedgerRelease
		}
		fax := held[i/per]
		var e *credits.LedgerEntry
		var err error
		if i%3 == 0 {
			err = inTx(ctx, s, func(tx services.Tx) error {
				e, err = tx.SettleHold(ctx, fax.ID, kind, at(100))
				return err
			})
		} else {
			e, err = s.SettleHold(ctx, fax.ID, kind, at(100))
		}
		results[i] = result{e, err}
		return err
	})
	ok, conflicts := countErrs(t, "SettleHold", errs, core.ErrConflict)
	if ok != len(held) || conflicts != len(held)*(per-1) {
		t.Fatalf("SettleHold: %d settled and %d conflicts, want %d and %d", ok, conflicts, len(held), len(held)*(per-1))
	}
	var released int64
	for i := range held {
		wins := 0
		for _, r := range results[i*per : (i+1)*per] {
			if r.err == nil {
				wins++
				released += r.e.AmountMicros
			}
		}
		if wins != 1 {
			t.Fatalf("hold of %s settled %d times", held[i].ID, wins)
		}
	}
	wantBalance(t, s, o, core.ModeLive, spare+released, 0)
}
