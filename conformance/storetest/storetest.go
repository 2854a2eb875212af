// Package storetest is the conformance suite for services.Store: every
// implementation (SQLite and PostgreSQL through core/store) must pass it.
// It talks to the store only through services.Store, with real databases.
package storetest

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
)

// RunTests runs every conformance test. newStore must return a fresh,
// migrated, empty store and arrange for it to be closed when t ends; each
// subtest gets its own.
func RunTests(t *testing.T, newStore func(t *testing.T) services.Store) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s services.Store)
	}{
		{"PingReady", testPingReady},
		{"QueuePool", testQueuePool},
		{"Owners", testOwners},
		{"APIKeys", testAPIKeys},
		{"Sessions", testSessions},
		{"Uploads", testUploads},
		{"UploadLease", testUploadLease},
		{"Documents", testDocuments},
		{"DocumentUsage", testDocumentUsage},
		{"Drafts", testDrafts},
		{"Faxes", testFaxes},
		{"MoveFax", testMoveFax},
		{"MoveFaxSettles", testMoveFaxSettles},
		{"FaxWithDocument", testFaxWithDocument},
		{"Charges", testCharges},
		{"Machine", testMachine},
		{"AgentTasks", testAgentTasks},
		{"AgentTaskDraft", testAgentTaskDraft},
		{"EventsFollow", testEventsFollow},
		{"Numbers", testNumbers},
		{"NumbersConcurrent", testNumbersConcurrent},
		{"Inbound", testInbound},
		{"CreditPurchases", testCreditPurchases},
		{"CancelDraft", testCancelDraft},
		{"ListFaxes", testListFaxes},
		{"Batches", testBatches},
		{"BatchesConcurrent", testBatchesConcurrent},
		{"Attempts", testAttempts},
		{"Ledger", testLedger},
		{"ListLedger", testListLedger},
		{"LedgerConcurrent", testLedgerConcurrent},
		{"Idempotency", testIdempotency},
		{"IdempotencyConcurrent", testIdempotencyConcurrent},
		{"Approvals", testApprovals},
		{"Checkouts", testCheckouts},
		{"ReverseCredits", testReverseCredits},
		{"ClaimOnce", testClaimOnce},
		{"TimeRoundTrip", testTimeRoundTrip},
		{"RateLimit", testRateLimit},
		{"RateLimitConcurrent", testRateLimitConcurrent},
		{"InTx", testInTx},
		{"InTxConcurrent", testInTxConcurrent},
		{"Secret", testSecret},
		{"OAuthClients", testOAuthClients},
		{"OAuthGrants", testOAuthGrants},
		{"OAuthTokens", testOAuthTokens},
		{"OAuthRotateConcurrent", testOAuthRotateConcurrent},
		{"OAuthConsents", testOAuthConsents},
		{"OAuthKeys", testOAuthKeys},
		{"Passkeys", RunPasskeyTests},
		{"Agents", RunAgentTests},
		{"Hosts", RunHostTests},
		{"WebhookEndpoints", testWebhookEndpoints},
		{"WebhookDispatch", testWebhookDispatch},
		{"WebhookDeliveries", testWebhookDeliveries},
		{"WebhookAttempts", testWebhookAttempts},
		{"WebhookSigningKey", testWebhookSigningKey},
		{"PushConfigs", testPushConfigs},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
	for _, tc := range eventTests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
	for _, tc := range purgeTests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

// concurrency is how many goroutines the race tests start at once.
const concurrency = 50

// at returns a fixed instant plus sec seconds. It is UTC and has whole
// microseconds, so values the store returns compare equal to it.
func at(sec int) time.Time {
	return time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC).Add(time.Duration(sec) * time.Second)
}

func ptr[T any](v T) *T { return &v }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless err matches want (nil means success).
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%s: unexpected error %v", what, err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// wantEqual compares with reflect.DeepEqual, printing both on mismatch.
func wantEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %s\nwant %s", what, dump(got), dump(want))
	}
}

func dump(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// race runs fn(i) for i in [0, n) in n goroutines released together and
// returns their errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// countErrs counts nil errors and errors matching want; anything else fails
// the test.
func countErrs(t *testing.T, what string, errs []error, want error) (ok, matched int) {
	t.Helper()
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, want):
			matched++
		default:
			t.Errorf("%s: unexpected error %v", what, err)
		}
	}
	return ok, matched
}

func testPingReady(t *testing.T, s services.Store) {
	ctx := t.Context()
	must(t, s.Ping(ctx))
	must(t, s.Ready(ctx))
}

// testQueuePool: the job queue's pool (River's own statements; on
// PostgreSQL a pool apart from the store's) reaches the same database and
// schema as the store: a row the store committed is there.
func testQueuePool(t *testing.T, s services.Store) {
	qp, ok := s.(interface {
		QueuePool() *sql.DB
		Dialect() string
	})
	if !ok {
		t.Skipf("%T has no queue pool", s)
	}
	o := newOwner(t, s)
	q := "SELECT count(*) FROM owners WHERE id = ?"
	if qp.Dialect() == "postgres" {
		q = "SELECT count(*) FROM owners WHERE id = $1"
	}
	var n int
	must(t, qp.QueuePool().QueryRowContext(t.Context(), q, o.ID).Scan(&n))
	if n != 1 {
		t.Fatalf("owner %s seen %d times through the queue pool, want 1", o.ID, n)
	}
}

// ---- fixtures

func newOwner(t *testing.T, s services.Store) *accounts.Owner {
	t.Helper()
	id := core.NewID(core.PrefixOwner)
	o := &accounts.Owner{ID: id, Email: id + "@example.com", Name: "Owner " + id, CreatedAt: at(0)}
	must(t, s.CreateOwner(t.Context(), o))
	return o
}

func newDocument(t *testing.T, s services.Store, o *accounts.Owner, mode core.Mode) *documents.Document {
	t.Helper()
	id := core.NewID(core.PrefixDocument)
	d := &documents.Document{
		ID: id, OwnerID: o.ID, Mode: mode, SourceType: string(documents.FilePDF), SourceBytes: 12345,
		SourceKey: o.ID + "/" + id + "/source", PDFKey: o.ID + "/" + id + "/source", PDFBytes: 12345, Pages: 3,
		SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", CreatedAt: at(1),
	}
	must(t, s.CreateDocument(t.Context(), d))
	return d
}

// faxOf builds (without storing) a queued credit fax for doc.
func faxOf(doc *documents.Document, created time.Time) *faxes.Fax {
	return &faxes.Fax{
		ID: core.NewID(core.PrefixFax), OwnerID: doc.OwnerID, Mode: doc.Mode, Status: faxes.Queued,
		To: "+14155550123", DocumentID: doc.ID, Pages: doc.Pages, PriceMicros: 210_000, Currency: core.Currency,
		PaymentMethod: faxes.PayCredits, CreatedAt: created, UpdatedAt: created,
	}
}

func newFax(t *testing.T, s services.Store, doc *documents.Document) *faxes.Fax {
	t.Helper()
	o := faxOf(doc, at(2))
	must(t, s.CreateFax(t.Context(), o))
	return o
}

func grant(t *testing.T, s services.Store, o *accounts.Owner, mode core.Mode, micros int64) *credits.LedgerEntry {
	t.Helper()
	e := &credits.LedgerEntry{
		ID: core.NewID(core.PrefixLedger), OwnerID: o.ID, Mode: mode, Kind: credits.LedgerGrant,
		AmountMicros: micros, Reason: "test grant", CreatedAt: at(0),
	}
	must(t, s.AppendLedger(t.Context(), e))
	return e
}

func holdFor(o *faxes.Fax, micros int64) *credits.LedgerEntry {
	return &credits.LedgerEntry{
		ID: core.NewID(core.PrefixLedger), OwnerID: o.OwnerID, Mode: o.Mode, Kind: credits.LedgerHold,
		AmountMicros: -micros, FaxID: &o.ID, Reason: "hold for fax " + o.ID, CreatedAt: at(3),
	}
}
