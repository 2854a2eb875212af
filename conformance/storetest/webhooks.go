package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/webhooks"
)

func newEndpoint(t *testing.T, s services.Store, o *accounts.Owner, mode core.Mode, sec int) *webhooks.Endpoint {
	t.Helper()
	e := &webhooks.Endpoint{
		ID: core.NewID(core.PrefixWebhookEndpoint), OwnerID: o.ID, Mode: mode, URL: "https://example.com/hooks/" + core.RandomString(4),
		Description: "réception", EventTypes: []events.Type{events.FaxDelivered, events.FaxFailed}, Signing: []webhooks.Scheme{webhooks.SchemeV1, webhooks.SchemeV1a},
		Enabled: true, Secret: []byte{0, 1, 2, 0xff}, CreatedAt: at(sec), UpdatedAt: at(sec),
	}
	must(t, s.CreateWebhookEndpoint(t.Context(), e))
	return e
}

// newFaxEvent appends an event about fax_x (data {"id": "fax_x"}).
func newFaxEvent(t *testing.T, s services.Store, o *accounts.Owner, mode core.Mode, typ events.Type, sec int) *events.Event {
	t.Helper()
	e, err := events.NewEvent(o.ID, mode, typ, "fax_x", map[string]string{"id": "fax_x"}, at(sec))
	must(t, err)
	must(t, s.AppendEvent(t.Context(), e))
	return e
}

// testWebhookEndpoints: an endpoint reads back exactly, for its owner and
// mode only; updates write what the owner may change; the outcome record
// keeps the failure streak in one statement; disabling is a
// compare-and-set; an enabled endpoint marks its owner's new events of its
// mode for dispatch and a disabled one does not.
func testWebhookEndpoints(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	ep := newEndpoint(t, s, o, core.ModeTest, 0)
	got, err := s.GetWebhookEndpoint(ctx, o.ID, core.ModeTest, ep.ID)
	must(t, err)
	wantEqual(t, "GetWebhookEndpoint", got, ep)
	got, err = s.GetWebhookEndpointByID(ctx, ep.ID)
	must(t, err)
	wantEqual(t, "GetWebhookEndpointByID", got, ep)
	_, err = s.GetWebhookEndpoint(ctx, other.ID, core.ModeTest, ep.ID)
	wantErr(t, "another owner's", err, core.ErrNoRows)
	_, err = s.GetWebhookEndpoint(ctx, o.ID, core.ModeLive, ep.ID)
	wantErr(t, "the other mode's", err, core.ErrNoRows)
	wantErr(t, "the same id again", s.CreateWebhookEndpoint(ctx, ep), core.ErrExists)

	second := newEndpoint(t, s, o, core.ModeTest, 5)
	second.EventTypes = []events.Type{}
	newEndpoint(t, s, o, core.ModeLive, 1)
	list, err := s.ListWebhookEndpoints(ctx, o.ID, core.ModeTest)
	must(t, err)
	if len(list) != 2 || list[0].ID != ep.ID || list[1].ID != second.ID {
		t.Fatalf("ListWebhookEndpoints: %s", dump(list))
	}

	// Marked for dispatch while an endpoint of the mode is enabled.
	marked := newFaxEvent(t, s, o, core.ModeTest, events.FaxQueued, 10)
	newFaxEvent(t, s, other, core.ModeTest, events.FaxQueued, 11) // B has no endpoint

	until, rotated := at(3600), at(20)
	ep.URL, ep.Description, ep.EventTypes, ep.Signing = "https://example.org/new", "", []events.Type{}, []webhooks.Scheme{webhooks.SchemeV1a}
	ep.PreviousSecret, ep.PreviousSecretUntil, ep.SecretRotatedAt, ep.Secret = ep.Secret, &until, &rotated, []byte("new sealed")
	ep.Enabled, ep.DisabledReason, ep.DisabledAt, ep.UpdatedAt = false, webhooks.DisabledByOwner, &rotated, rotated
	must(t, s.UpdateWebhookEndpoint(ctx, ep))
	got, err = s.GetWebhookEndpoint(ctx, o.ID, core.ModeTest, ep.ID)
	must(t, err)
	wantEqual(t, "updated", got, ep)
	missing := *ep
	missing.ID = core.NewID(core.PrefixWebhookEndpoint)
	wantErr(t, "update a missing endpoint", s.UpdateWebhookEndpoint(ctx, &missing), core.ErrNoRows)

	// The failure streak.
	since, err := s.RecordWebhookOutcome(ctx, second.ID, false, at(30))
	must(t, err)
	wantEqual(t, "first failure", *since, at(30))
	since, err = s.RecordWebhookOutcome(ctx, second.ID, false, at(40))
	must(t, err)
	wantEqual(t, "a later failure keeps the streak's start", *since, at(30))
	_, err = s.RecordWebhookOutcome(ctx, second.ID, true, at(50))
	must(t, err)
	got, err = s.GetWebhookEndpointByID(ctx, second.ID)
	must(t, err)
	if got.FailingSince != nil || got.LastSuccessAt == nil || !got.LastSuccessAt.Equal(at(50)) {
		t.Fatalf("after a success: failing since %v, last success %v", got.FailingSince, got.LastSuccessAt)
	}
	_, err = s.RecordWebhookOutcome(ctx, second.ID, true, at(80))
	must(t, err)
	got, _ = s.GetWebhookEndpointByID(ctx, second.ID)
	wantEqual(t, "a success within the minute writes nothing", *got.LastSuccessAt, at(50))
	_, err = s.RecordWebhookOutcome(ctx, second.ID, true, at(111))
	must(t, err)
	got, _ = s.GetWebhookEndpointByID(ctx, second.ID)
	wantEqual(t, "a success a minute later", *got.LastSuccessAt, at(111))

	ok, err := s.DisableWebhookEndpoint(ctx, second.ID, webhooks.DisabledGone, at(120))
	must(t, err)
	again, err := s.DisableWebhookEndpoint(ctx, second.ID, webhooks.DisabledFailing, at(121))
	must(t, err)
	if !ok || again {
		t.Fatalf("disable: first %v, second %v; want true, false", ok, again)
	}
	got, _ = s.GetWebhookEndpointByID(ctx, second.ID)
	if got.Enabled || got.DisabledReason != webhooks.DisabledGone || !got.DisabledAt.Equal(at(120)) {
		t.Fatalf("disabled: %s", dump(got))
	}

	// No enabled endpoint left in test mode: new events are not marked.
	newFaxEvent(t, s, o, core.ModeTest, events.FaxQueued, 130)
	evs, err := s.EventsToDispatch(ctx, 10)
	must(t, err)
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.ID)
	}
	wantEqual(t, "marked events", ids, []string{marked.ID})

	must(t, s.DeleteWebhookEndpoint(ctx, o.ID, core.ModeTest, ep.ID))
	wantErr(t, "delete twice", s.DeleteWebhookEndpoint(ctx, o.ID, core.ModeTest, ep.ID), core.ErrNoRows)
	wantErr(t, "another owner deletes", s.DeleteWebhookEndpoint(ctx, other.ID, core.ModeTest, second.ID), core.ErrNoRows)
}

// testWebhookDispatch: marked events come oldest first, at most the limit,
// and clearing unmarks exactly the ones named; in a transaction too.
func testWebhookDispatch(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	newEndpoint(t, s, o, core.ModeLive, 0)
	var all []*events.Event
	for i := range 5 {
		all = append(all, newFaxEvent(t, s, o, core.ModeLive, events.FaxSending, i))
	}
	newFaxEvent(t, s, o, core.ModeTest, events.FaxSending, 9) // no test-mode endpoint
	evs, err := s.EventsToDispatch(ctx, 3)
	must(t, err)
	if len(evs) != 3 || evs[0].ID != all[0].ID || evs[2].ID != all[2].ID || !evs[0].Dispatch || evs[0].Seq >= evs[1].Seq {
		t.Fatalf("EventsToDispatch: %s", dump(evs))
	}
	var data map[string]string
	must(t, json.Unmarshal(evs[0].Data, &data))
	wantEqual(t, "data", data["id"], "fax_x")
	must(t, s.InTx(ctx, func(tx core.Tx) error {
		q := tx.(services.Tx)
		evs, err := q.EventsToDispatch(ctx, 2)
		if err != nil {
			return err
		}
		return q.ClearDispatch(ctx, []int64{evs[0].Seq, evs[1].Seq})
	}))
	must(t, s.ClearDispatch(ctx, nil))
	evs, err = s.EventsToDispatch(ctx, 10)
	must(t, err)
	if len(evs) != 3 || evs[0].ID != all[2].ID {
		t.Fatalf("after clearing two: %s", dump(evs))
	}
}

func newDelivery(o *accounts.Owner, ep *webhooks.Endpoint, eventID string, origin webhooks.Origin, sec int) *webhooks.Delivery {
	return &webhooks.Delivery{
		ID: core.NewID(core.PrefixWebhookDelivery), TargetKind: webhooks.TargetWebhook, TargetID: ep.ID, OwnerID: o.ID, Mode: ep.Mode,
		EventID: eventID, EventType: events.FaxDelivered, Origin: origin, Status: webhooks.DeliveryPending, CreatedAt: at(sec), UpdatedAt: at(sec),
	}
}

// testWebhookDeliveries: a delivery of the dispatcher is once per event
// and target (a redelivery is another); updates are compare-and-set on
// status and attempts; the log lists newest first with a cursor and a
// status filter; a test event's body is found by its id.
func testWebhookDeliveries(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	ep, ep2 := newEndpoint(t, s, o, core.ModeTest, 0), newEndpoint(t, s, o, core.ModeTest, 1)
	d := newDelivery(o, ep, "evt_1", webhooks.OriginEvent, 10)
	must(t, s.InsertWebhookDelivery(ctx, d))
	got, err := s.GetWebhookDelivery(ctx, d.ID)
	must(t, err)
	wantEqual(t, "GetWebhookDelivery", got, d)
	wantErr(t, "the same event to the same endpoint", s.InsertWebhookDelivery(ctx, newDelivery(o, ep, "evt_1", webhooks.OriginEvent, 11)), core.ErrExists)
	must(t, s.InsertWebhookDelivery(ctx, newDelivery(o, ep2, "evt_1", webhooks.OriginEvent, 11)))
	re := newDelivery(o, ep, "evt_1", webhooks.OriginRedeliver, 12)
	must(t, s.InsertWebhookDelivery(ctx, re))
	must(t, s.InsertWebhookDelivery(ctx, newDelivery(o, ep, "evt_1", webhooks.OriginRedeliver, 13)))
	test := newDelivery(o, ep, "evt_test", webhooks.OriginTest, 14)
	test.EventType, test.Payload = events.WebhookTest, []byte(`{"id":"evt_test","type":"webhook.test"}`)
	must(t, s.InsertWebhookDelivery(ctx, test))
	got, err = s.GetWebhookDelivery(ctx, test.ID)
	must(t, err)
	wantEqual(t, "a test delivery", got, test)
	p, err := s.WebhookTestPayload(ctx, o.ID, webhooks.TargetWebhook, ep.ID, "evt_test")
	must(t, err)
	wantEqual(t, "WebhookTestPayload", string(p), string(test.Payload))
	_, err = s.WebhookTestPayload(ctx, o.ID, webhooks.TargetWebhook, ep.ID, "evt_1")
	wantErr(t, "the payload of a logged event", err, core.ErrNoRows)

	next := at(60)
	d.Attempts, d.NextAttemptAt, d.LastStatusCode, d.LastError, d.UpdatedAt = 1, &next, 503, "the endpoint answered 503", at(20)
	wantErr(t, "update from the wrong attempt count", s.UpdateWebhookDelivery(ctx, d, 1), core.ErrConflict)
	must(t, s.UpdateWebhookDelivery(ctx, d, 0))
	got, _ = s.GetWebhookDelivery(ctx, d.ID)
	wantEqual(t, "updated", got, d)
	done := at(70)
	d.Status, d.CompletedAt, d.NextAttemptAt = webhooks.DeliveryDelivered, &done, nil
	must(t, s.UpdateWebhookDelivery(ctx, d, 1))
	wantErr(t, "update an ended delivery", s.UpdateWebhookDelivery(ctx, d, 1), core.ErrConflict)
	gone := *d
	gone.ID = core.NewID(core.PrefixWebhookDelivery)
	wantErr(t, "update a missing delivery", s.UpdateWebhookDelivery(ctx, &gone, 0), core.ErrNoRows)

	list, err := s.ListWebhookDeliveries(ctx, webhooks.DeliveryFilter{OwnerID: o.ID, Mode: core.ModeTest, TargetKind: webhooks.TargetWebhook, TargetID: ep.ID, Limit: 10})
	must(t, err)
	// Newest first by id (ids begin with their millisecond; deliveries
	// made within one millisecond are in the order of their random part).
	var ids []string
	for _, x := range list {
		ids = append(ids, x.ID)
	}
	want := []string{d.ID, re.ID, test.ID}
	if len(list) != 4 || !slices.IsSortedFunc(ids, func(a, b string) int { return strings.Compare(b, a) }) || !containsAll(ids, want) {
		t.Fatalf("the log, newest first: %s", dump(list))
	}
	page, err := s.ListWebhookDeliveries(ctx, webhooks.DeliveryFilter{OwnerID: o.ID, Mode: core.ModeTest, TargetKind: webhooks.TargetWebhook, TargetID: ep.ID, BeforeID: list[1].ID, Limit: 1})
	must(t, err)
	wantEqual(t, "after the cursor", page[0].ID, list[2].ID)
	delivered, err := s.ListWebhookDeliveries(ctx, webhooks.DeliveryFilter{OwnerID: o.ID, Mode: core.ModeTest, TargetKind: webhooks.TargetWebhook, TargetID: ep.ID, Status: webhooks.DeliveryDelivered})
	must(t, err)
	if len(delivered) != 1 || delivered[0].ID != d.ID {
		t.Fatalf("delivered only: %s", dump(delivered))
	}
	none, err := s.ListWebhookDeliveries(ctx, webhooks.DeliveryFilter{OwnerID: newOwner(t, s).ID, Mode: core.ModeTest, TargetKind: webhooks.TargetWebhook, TargetID: ep.ID})
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("another owner lists %d", len(none))
	}
}

// testWebhookAttempts: an attempt is written once per number, finished
// once (a second finish, as of a run presumed dead, conflicts), listed per
// delivery in order; the attempts in flight are counted per owner and
// target, only those started after the lease's start; the owner lock is
// taken inside a transaction; purging deletes old deliveries with their
// attempts.
func testWebhookAttempts(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	ep, ep2 := newEndpoint(t, s, o, core.ModeTest, 0), newEndpoint(t, s, o, core.ModeTest, 1)
	d, d2 := newDelivery(o, ep, "evt_1", webhooks.OriginEvent, 10), newDelivery(o, ep2, "evt_1", webhooks.OriginEvent, 10)
	must(t, s.InsertWebhookDelivery(ctx, d))
	must(t, s.InsertWebhookDelivery(ctx, d2))
	attempt := func(d *webhooks.Delivery, n, sec int) *webhooks.Attempt {
		a := &webhooks.Attempt{DeliveryID: d.ID, Number: n, OwnerID: d.OwnerID, TargetID: d.TargetID, Status: webhooks.AttemptSending, StartedAt: at(sec)}
		must(t, s.InsertWebhookAttempt(ctx, a))
		return a
	}
	a1 := attempt(d, 1, 100)
	wantErr(t, "attempt 1 again", s.InsertWebhookAttempt(ctx, &webhooks.Attempt{DeliveryID: d.ID, Number: 1, OwnerID: o.ID, TargetID: ep.ID, Status: webhooks.AttemptSending, StartedAt: at(101)}), core.ErrExists)
	attempt(d2, 1, 150)
	owner, target, err := s.WebhookAttemptsInFlight(ctx, o.ID, ep.ID, at(50))
	must(t, err)
	if owner != 2 || target != 1 {
		t.Fatalf("in flight: owner %d, target %d; want 2, 1", owner, target)
	}
	owner, target, err = s.WebhookAttemptsInFlight(ctx, o.ID, ep.ID, at(120))
	must(t, err)
	if owner != 1 || target != 0 {
		t.Fatalf("in flight since 120 s: owner %d, target %d; want 1, 0", owner, target)
	}
	owner, _, err = s.WebhookAttemptsInFlight(ctx, other.ID, ep.ID, at(0))
	must(t, err)
	wantEqual(t, "another owner's in flight", owner, 0)

	fin := at(101)
	a1.Status, a1.StatusCode, a1.Error, a1.Response, a1.DurationMS, a1.FinishedAt = webhooks.AttemptFailed, 500, "the endpoint answered 500", "oops ✓", 812, &fin
	must(t, s.FinishWebhookAttempt(ctx, a1))
	late := *a1
	late.Status = webhooks.AttemptSucceeded
	wantErr(t, "finish twice", s.FinishWebhookAttempt(ctx, &late), core.ErrConflict)
	got, err := s.GetWebhookAttempt(ctx, d.ID, 1)
	must(t, err)
	wantEqual(t, "GetWebhookAttempt", got, a1)
	_, err = s.GetWebhookAttempt(ctx, d.ID, 2)
	wantErr(t, "a missing attempt", err, core.ErrNoRows)
	attempt(d, 2, 200)
	list, err := s.ListWebhookAttempts(ctx, []string{d.ID, d2.ID})
	must(t, err)
	if len(list) != 3 {
		t.Fatalf("ListWebhookAttempts: %s", dump(list))
	}
	var ofD []int
	for _, a := range list {
		if a.DeliveryID == d.ID {
			ofD = append(ofD, a.Number)
		}
	}
	wantEqual(t, "attempts in order", ofD, []int{1, 2})
	none, err := s.ListWebhookAttempts(ctx, nil)
	must(t, err)
	wantEqual(t, "no ids", len(none), 0)

	must(t, s.InTx(ctx, func(tx core.Tx) error {
		q := tx.(services.Tx)
		if err := q.LockWebhookOwner(ctx, o.ID); err != nil {
			return err
		}
		return q.LockWebhookOwner(ctx, o.ID) // again in the same transaction
	}))

	// A skipped attempt ends its delivery skipped (an A2A push whose body
	// its receiver already has).
	a3 := attempt(d2, 2, 30)
	skipAt := at(31)
	a3.Status, a3.Error, a3.FinishedAt = webhooks.AttemptSkipped, "not sent: the same body", &skipAt
	must(t, s.FinishWebhookAttempt(ctx, a3))
	d2.Status, d2.Attempts, d2.CompletedAt, d2.LastError, d2.UpdatedAt = webhooks.DeliverySkipped, 2, &skipAt, a3.Error, skipAt
	must(t, s.UpdateWebhookDelivery(ctx, d2, 0))
	gotD2, err := s.GetWebhookDelivery(ctx, d2.ID)
	must(t, err)
	wantEqual(t, "a skipped delivery", gotD2, d2)
	gotA3, err := s.GetWebhookAttempt(ctx, d2.ID, 2)
	must(t, err)
	wantEqual(t, "a skipped attempt", gotA3, a3)

	// Purged: d and d2 (created at 10 s) but not a newer one; their
	// attempts go with them.
	newer := newDelivery(o, ep, "evt_2", webhooks.OriginEvent, 1000)
	must(t, s.InsertWebhookDelivery(ctx, newer))
	n, err := s.PurgeWebhookDeliveries(ctx, at(500))
	must(t, err)
	wantEqual(t, "purged", n, int64(2))
	_, err = s.GetWebhookDelivery(ctx, d.ID)
	wantErr(t, "a purged delivery", err, core.ErrNoRows)
	left, err := s.ListWebhookAttempts(ctx, []string{d.ID, d2.ID})
	must(t, err)
	wantEqual(t, "attempts of purged deliveries", len(left), 0)
	_, err = s.GetWebhookDelivery(ctx, newer.ID)
	must(t, err)
}

// testWebhookSigningKey: the key is stored once; a second insert (another
// replica's) is ErrExists and every reader gets the first.
func testWebhookSigningKey(t *testing.T, s services.Store) {
	ctx := t.Context()
	_, err := s.GetWebhookSigningKey(ctx, "v1a-1")
	wantErr(t, "before any", err, core.ErrNoRows)
	k := &webhooks.SigningKey{ID: "v1a-1", PublicKey: []byte("public key bytes"), Sealed: []byte{0, 9, 8}, CreatedAt: at(0)}
	must(t, s.InsertWebhookSigningKey(ctx, k))
	other := *k
	other.PublicKey = []byte("another")
	err = s.InsertWebhookSigningKey(ctx, &other)
	if !errors.Is(err, core.ErrExists) {
		t.Fatalf("a second key: %v", err)
	}
	got, err := s.GetWebhookSigningKey(ctx, "v1a-1")
	must(t, err)
	wantEqual(t, "the first key", got, k)
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
