package storetest

import (
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/tasks"
)

// testAgentTasks: a task reads back exactly, only by its owner (another
// owner's task is ErrNoRows, like an unknown id), and an id is taken once.
func testAgentTasks(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	d := newDraft(t, s, newDocument(t, s, o, core.ModeTest))
	task := &tasks.Task{ID: core.NewID(core.PrefixTask), OwnerID: o.ID, Mode: core.ModeTest, Kind: tasks.KindFax,
		Skill: "create_fax", ContextID: "ctx_1", SubjectID: d.ID, CreatedAt: at(3)}
	must(t, s.CreateAgentTask(ctx, task))
	got, err := s.GetAgentTask(ctx, o.ID, task.ID)
	must(t, err)
	wantEqual(t, "GetAgentTask", got, task)
	_, err = s.GetAgentTask(ctx, other.ID, task.ID)
	wantErr(t, "GetAgentTask of another owner", err, core.ErrNoRows)
	_, err = s.GetAgentTask(ctx, o.ID, "tsk_missing")
	wantErr(t, "GetAgentTask of an unknown id", err, core.ErrNoRows)

	dup := *task
	dup.OwnerID = other.ID
	wantErr(t, "task with a taken id", s.CreateAgentTask(ctx, &dup), core.ErrExists)
	_, err = s.GetAgentTask(ctx, other.ID, task.ID)
	wantErr(t, "task of a refused create", err, core.ErrNoRows)
}

// testAgentTaskDraft: GetAgentTaskDraft reads a task as GetAgentTask does
// and a fax task's draft as GetDraft reads it with the task's owner and
// mode; no draft for another kind of task, for a subject that is another
// owner's or the other mode's draft, or for one that is gone.
func testAgentTaskDraft(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	d := newDraft(t, s, newDocument(t, s, o, core.ModeTest))
	wantDraft, err := s.GetDraft(ctx, o.ID, core.ModeTest, d.ID)
	must(t, err)
	newTask := func(owner string, mode core.Mode, kind tasks.Kind, subject string) *tasks.Task {
		t.Helper()
		task := &tasks.Task{ID: core.NewID(core.PrefixTask), OwnerID: owner, Mode: mode, Kind: kind,
			Skill: "create_fax", ContextID: "ctx_1", SubjectID: subject, CreatedAt: at(3)}
		must(t, s.CreateAgentTask(ctx, task))
		return task
	}

	task := newTask(o.ID, core.ModeTest, tasks.KindFax, d.ID)
	gotTask, gotDraft, err := s.GetAgentTaskDraft(ctx, o.ID, task.ID)
	must(t, err)
	wantEqual(t, "GetAgentTaskDraft task", gotTask, task)
	wantEqual(t, "GetAgentTaskDraft draft", gotDraft, wantDraft)
	// A draft with options and a sending number reads back as GetDraft reads it.
	d2 := *d
	d2.ID, d2.From, d2.Options = core.NewID(core.PrefixDraft), "+12125550100", faxes.Options{Header: "Billing dept."}
	must(t, s.CreateDraft(ctx, &d2))
	wantDraft2, err := s.GetDraft(ctx, o.ID, core.ModeTest, d2.ID)
	must(t, err)
	_, gotDraft, err = s.GetAgentTaskDraft(ctx, o.ID, newTask(o.ID, core.ModeTest, tasks.KindFax, d2.ID).ID)
	must(t, err)
	wantEqual(t, "GetAgentTaskDraft draft with options", gotDraft, wantDraft2)

	_, _, err = s.GetAgentTaskDraft(ctx, other.ID, task.ID)
	wantErr(t, "GetAgentTaskDraft of another owner", err, core.ErrNoRows)
	_, _, err = s.GetAgentTaskDraft(ctx, o.ID, "tsk_missing")
	wantErr(t, "GetAgentTaskDraft of an unknown id", err, core.ErrNoRows)

	for name, task := range map[string]*tasks.Task{
		"another owner's draft":     newTask(other.ID, core.ModeTest, tasks.KindFax, d.ID),
		"the other mode's draft":    newTask(o.ID, core.ModeLive, tasks.KindFax, d.ID),
		"a credit purchase":         newTask(o.ID, core.ModeTest, tasks.KindCreditPurchase, d.ID),
		"a draft that is not there": newTask(o.ID, core.ModeTest, tasks.KindFax, "drf_missing"),
	} {
		gotTask, gotDraft, err := s.GetAgentTaskDraft(ctx, task.OwnerID, task.ID)
		must(t, err)
		wantEqual(t, "GetAgentTaskDraft task, "+name, gotTask, task)
		if gotDraft != nil {
			t.Errorf("GetAgentTaskDraft, %s: draft %s, want none", name, gotDraft.ID)
		}
	}
}

// newPurchase stores a purchase of owner o offered at sec.
func newPurchase(t *testing.T, s services.Store, o *accounts.Owner, sec int) *tasks.CreditPurchase {
	t.Helper()
	c := &tasks.CreditPurchase{
		ID: core.NewID(core.PrefixCart), OwnerID: o.ID, Mode: core.ModeTest, TaskID: core.NewID(core.PrefixTask),
		PackID: "pack_20", AmountMicros: 20_000_000, CreditMicros: 20_000_000, Currency: "USD",
		Status: tasks.PurchaseCartOffered, CartJWS: "eyJhbGciOiJFZERTQSJ9.e30.sig", ExpiresAt: at(sec + 900),
		CreatedAt: at(sec), UpdatedAt: at(sec),
	}
	must(t, s.CreateCreditPurchase(t.Context(), c))
	return c
}

// testCreditPurchases: a purchase reads back exactly, by owner and by
// approval; updates are compare-and-set on the status; a payment mandate
// id is recorded on one purchase only, and a refused update inside a
// transaction leaves the transaction usable.
func testCreditPurchases(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	c := newPurchase(t, s, o, 0)
	got, err := s.GetCreditPurchase(ctx, o.ID, c.ID)
	must(t, err)
	wantEqual(t, "GetCreditPurchase", got, c)
	_, err = s.GetCreditPurchase(ctx, other.ID, c.ID)
	wantErr(t, "GetCreditPurchase of another owner", err, core.ErrNoRows)
	_, err = s.GetCreditPurchase(ctx, o.ID, "cart_missing")
	wantErr(t, "GetCreditPurchase of an unknown id", err, core.ErrNoRows)
	_, err = s.GetCreditPurchaseByApproval(ctx, "apr_missing")
	wantErr(t, "GetCreditPurchaseByApproval before any approval", err, core.ErrNoRows)
	dup := *c
	dup.OwnerID = other.ID
	wantErr(t, "purchase with a taken id", s.CreateCreditPurchase(ctx, &dup), core.ErrExists)

	// cart_offered → awaiting_approval with the mandate, its credential
	// and the approval.
	mandate, approval := "pm_1", core.NewID(core.PrefixApproval)
	next := *c
	next.Status, next.PaymentMandateID, next.PaymentMethod = tasks.PurchaseAwaitingApproval, &mandate, "CARD"
	next.Credential, next.ApprovalID, next.UpdatedAt = []byte("sealed credential"), &approval, at(10)
	must(t, s.UpdateCreditPurchase(ctx, &next, tasks.PurchaseCartOffered))
	got, err = s.GetCreditPurchase(ctx, o.ID, c.ID)
	must(t, err)
	wantEqual(t, "purchase awaiting approval", got, &next)
	got, err = s.GetCreditPurchaseByApproval(ctx, approval)
	must(t, err)
	wantEqual(t, "GetCreditPurchaseByApproval", got, &next)

	// The same transition again finds the purchase moved on.
	again := next
	again.UpdatedAt = at(11)
	wantErr(t, "UpdateCreditPurchase from a stale status", s.UpdateCreditPurchase(ctx, &again, tasks.PurchaseCartOffered), core.ErrConflict)
	missing := next
	missing.ID = "cart_missing"
	wantErr(t, "UpdateCreditPurchase of a missing purchase", s.UpdateCreditPurchase(ctx, &missing, tasks.PurchaseCartOffered), core.ErrNoRows)

	// A mandate id already recorded on another purchase is a replay, also
	// inside a transaction, which stays usable (PostgreSQL aborts a
	// transaction on a failed statement unless it is contained).
	c2 := newPurchase(t, s, o, 20)
	replay := *c2
	replay.Status, replay.PaymentMandateID, replay.UpdatedAt = tasks.PurchaseAwaitingApproval, &mandate, at(21)
	wantErr(t, "replayed mandate id", s.UpdateCreditPurchase(ctx, &replay, tasks.PurchaseCartOffered), core.ErrExists)
	err = inTx(ctx, s, func(tx services.Tx) error {
		wantErr(t, "replayed mandate id in a transaction", tx.UpdateCreditPurchase(ctx, &replay, tasks.PurchaseCartOffered), core.ErrExists)
		fresh := "pm_2"
		replay.PaymentMandateID = &fresh
		return tx.UpdateCreditPurchase(ctx, &replay, tasks.PurchaseCartOffered)
	})
	must(t, err)
	got, err = s.GetCreditPurchase(ctx, o.ID, c2.ID)
	must(t, err)
	wantEqual(t, "purchase after a refused then accepted update", got, &replay)

	// awaiting_approval → completed with its charge; the credential goes.
	charge := core.NewID(core.PrefixCharge)
	done := next
	done.Status, done.ChargeID, done.Credential, done.UpdatedAt = tasks.PurchaseCompleted, &charge, nil, at(30)
	must(t, s.UpdateCreditPurchase(ctx, &done, tasks.PurchaseAwaitingApproval))
	got, err = s.GetCreditPurchase(ctx, o.ID, c.ID)
	must(t, err)
	wantEqual(t, "completed purchase", got, &done)

	// Declined, with why.
	c3 := newPurchase(t, s, o, 40)
	declined := *c3
	declined.Status, declined.FailureCode, declined.FailureReason, declined.UpdatedAt = tasks.PurchaseDeclined, "approval_declined", "the owner declined", at(41)
	must(t, s.UpdateCreditPurchase(ctx, &declined, tasks.PurchaseCartOffered))
	got, err = s.GetCreditPurchase(ctx, o.ID, c3.ID)
	must(t, err)
	wantEqual(t, "declined purchase", got, &declined)
}

// testCancelDraft: only an open draft is canceled, once, and only by its
// owner in its mode.
func testCancelDraft(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeTest)
	d := newDraft(t, s, doc)
	wantErr(t, "CancelDraft by another owner", s.CancelDraft(ctx, other.ID, core.ModeTest, d.ID), core.ErrNoRows)
	wantErr(t, "CancelDraft in the other mode", s.CancelDraft(ctx, o.ID, core.ModeLive, d.ID), core.ErrNoRows)
	wantErr(t, "CancelDraft of a missing draft", s.CancelDraft(ctx, o.ID, core.ModeTest, "drf_missing"), core.ErrNoRows)
	must(t, s.CancelDraft(ctx, o.ID, core.ModeTest, d.ID))
	got, err := s.GetDraft(ctx, o.ID, core.ModeTest, d.ID)
	must(t, err)
	d.Status = faxes.DraftCanceled
	wantEqual(t, "canceled draft", got, d)
	wantErr(t, "CancelDraft twice", s.CancelDraft(ctx, o.ID, core.ModeTest, d.ID), core.ErrConflict)
	wantErr(t, "MarkDraftPaid of a canceled draft", s.MarkDraftPaid(ctx, d.ID, "fax_x"), core.ErrConflict)

	paid := newDraft(t, s, doc)
	fax := faxOf(doc, at(5))
	fax.PaymentMethod, fax.DraftID = faxes.PayCheckout, &paid.ID
	must(t, s.CreateFax(ctx, fax))
	must(t, s.MarkDraftPaid(ctx, paid.ID, fax.ID))
	wantErr(t, "CancelDraft of a paid draft", s.CancelDraft(ctx, o.ID, core.ModeTest, paid.ID), core.ErrConflict)

	// Concurrent cancel and payment: exactly one wins.
	raced := newDraft(t, s, doc)
	rfax := faxOf(doc, at(6))
	rfax.PaymentMethod, rfax.DraftID = faxes.PayCheckout, &raced.ID
	must(t, s.CreateFax(ctx, rfax))
	errs := race(2, func(i int) error {
		if i == 0 {
			return s.CancelDraft(ctx, o.ID, core.ModeTest, raced.ID)
		}
		return s.MarkDraftPaid(ctx, raced.ID, rfax.ID)
	})
	if ok, conflicts := countErrs(t, "cancel racing payment", errs, core.ErrConflict); ok != 1 || conflicts != 1 {
		t.Fatalf("cancel racing payment: %d won, %d conflicts; want 1 and 1", ok, conflicts)
	}
}

// testPurgeAgentTasks: tasks and ended purchases older than the cutoff go;
// newer ones, live purchases and the tasks of live subjects stay.
func testPurgeAgentTasks(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeTest)
	task := func(kind tasks.Kind, subject string, sec int) *tasks.Task {
		tk := &tasks.Task{ID: core.NewID(core.PrefixTask), OwnerID: o.ID, Mode: core.ModeTest, Kind: kind,
			ContextID: "ctx", SubjectID: subject, CreatedAt: at(sec)}
		must(t, s.CreateAgentTask(ctx, tk))
		return tk
	}
	// A task of a fax that ended, one whose fax is still queued, a recent one.
	ended, queued := newDraft(t, s, doc), newDraft(t, s, doc)
	for _, d := range []*faxes.Draft{ended, queued} {
		f := faxOf(doc, at(2))
		f.PaymentMethod, f.DraftID = faxes.PayCheckout, &d.ID
		must(t, s.CreateFax(ctx, f))
		must(t, s.MarkDraftPaid(ctx, d.ID, f.ID))
		if d == ended {
			f.Status, f.CompletedAt = faxes.Delivered, ptr(at(3))
			must(t, s.UpdateFax(ctx, f, faxes.Queued))
		}
	}
	oldEnded := task(tasks.KindFax, ended.ID, 0)
	oldQueued := task(tasks.KindFax, queued.ID, 0)
	recent := task(tasks.KindFax, newDraft(t, s, doc).ID, 200)
	// Old tasks of unpaid drafts: one still payable at now, one expired.
	oldOpen := task(tasks.KindFax, newDraft(t, s, doc).ID, 0)
	lapsed := newDraft(t, s, doc)
	lapsed.ID, lapsed.ExpiresAt = core.NewID(core.PrefixDraft), at(500)
	must(t, s.CreateDraft(ctx, lapsed))
	oldLapsed := task(tasks.KindFax, lapsed.ID, 0)

	// Purchases: ended long ago, still awaiting approval, recent and ended.
	oldDone := newPurchase(t, s, o, 0)
	done := *oldDone
	done.Status, done.UpdatedAt = tasks.PurchaseCompleted, at(10)
	must(t, s.UpdateCreditPurchase(ctx, &done, tasks.PurchaseCartOffered))
	live := *oldDone
	live.ID, live.Status, live.ExpiresAt, live.UpdatedAt = core.NewID(core.PrefixCart), tasks.PurchaseAwaitingApproval, at(100_000), at(0)
	must(t, s.CreateCreditPurchase(ctx, &live))
	// Its cart expired long ago without anyone marking it: ended too.
	stale := newPurchase(t, s, o, -1000)
	recentDone := newPurchase(t, s, o, 200)
	rd := *recentDone
	rd.Status, rd.UpdatedAt = tasks.PurchaseDeclined, at(201)
	must(t, s.UpdateCreditPurchase(ctx, &rd, tasks.PurchaseCartOffered))
	oldPurchaseTask := task(tasks.KindCreditPurchase, oldDone.ID, 0)
	livePurchaseTask := task(tasks.KindCreditPurchase, live.ID, 0)

	now, cutoff := at(1000), at(100)
	n, err := s.PurgeCreditPurchases(ctx, cutoff)
	wantPurged(t, "ended purchases", n, err, 2)
	n, err = s.PurgeAgentTasks(ctx, now, cutoff)
	wantPurged(t, "agent tasks", n, err, 3)
	for _, gone := range []*tasks.Task{oldEnded, oldPurchaseTask, oldLapsed} {
		_, err := s.GetAgentTask(ctx, o.ID, gone.ID)
		wantErr(t, "purged task", err, core.ErrNoRows)
	}
	for _, kept := range []*tasks.Task{oldQueued, recent, livePurchaseTask, oldOpen} {
		_, err := s.GetAgentTask(ctx, o.ID, kept.ID)
		must(t, err)
	}
	for _, gone := range []string{oldDone.ID, stale.ID} {
		_, err := s.GetCreditPurchase(ctx, o.ID, gone)
		wantErr(t, "purged purchase", err, core.ErrNoRows)
	}
	for _, kept := range []string{live.ID, recentDone.ID} {
		_, err := s.GetCreditPurchase(ctx, o.ID, kept)
		must(t, err)
	}
	n, err = s.PurgeCreditPurchases(ctx, cutoff)
	wantPurged(t, "second run, purchases", n, err, 0)
	n, err = s.PurgeAgentTasks(ctx, now, cutoff)
	wantPurged(t, "second run, tasks", n, err, 0)
}
