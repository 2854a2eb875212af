package faxes_test

import (
	"errors"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestRetryPolicy: a fax's own policy decides how often and how far apart
// busy and unanswered calls are retried; other faxes keep the default.
func TestRetryPolicy(t *testing.T) {
	clk := testenv.NewClock()
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.Now = clk.Now }))
	p := e.Principal(t, e.KeyATest)
	for _, c := range []struct {
		name     string
		to       string
		policy   *faxes.RetryPolicy
		attempts int
		delay    time.Duration
	}{
		{"busy, 5 calls 7 minutes apart", "+12125550101", &faxes.RetryPolicy{Attempts: 5, DelayMinutes: 7}, 5, 7 * time.Minute},
		{"no answer, one call only", "+12125550102", &faxes.RetryPolicy{Attempts: 1, DelayMinutes: 1}, 1, 0},
		{"busy, the default", "+12125550101", nil, 3, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, _, err := e.Svc.Faxes.Send(ctx, p, c.name, faxes.SendRequest{To: c.to, UploadToken: e.Upload(t, p, 1), Options: faxes.Options{Retry: c.policy}})
			if err != nil {
				t.Fatal(err)
			}
			for n := 1; ; n++ {
				if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
					t.Fatalf("attempt %d: %v", n, err)
				}
				got, err := e.Svc.Faxes.Get(ctx, p, o.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status == faxes.Failed {
					if n != c.attempts || got.Attempts != c.attempts {
						t.Fatalf("failed after %d attempts, want %d", got.Attempts, c.attempts)
					}
					return
				}
				if got.Status != faxes.Queued || got.NextAttemptAt == nil {
					t.Fatalf("after attempt %d: %s", n, got.Status)
				}
				// Times are stored to the microsecond.
				wait := got.NextAttemptAt.Sub(clk.Now()).Round(time.Millisecond)
				if c.delay != 0 && wait != c.delay {
					t.Fatalf("retry %d in %s, want %s", n, wait, c.delay)
				}
				// Not before its time: the job is deferred, not run.
				if wait > 0 {
					var nb *faxes.NotBeforeError
					if err := e.Svc.Faxes.Deliver(ctx, o.ID); !errors.As(err, &nb) {
						t.Fatalf("an early retry ran: %v", err)
					}
				}
				clk.Advance(wait)
			}
		})
	}
}

// TestScheduledSendGoesOutOnTime: a scheduled fax is not attempted before
// sendAt and is at it, with the header's time that of the attempt.
func TestScheduledSendGoesOutOnTime(t *testing.T) {
	clk := testenv.NewClock()
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.Now = clk.Now }))
	p := e.Principal(t, e.KeyATest)
	at := clk.Now().Add(3 * time.Hour)
	o, _, err := e.Svc.Faxes.Send(ctx, p, "sched", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1), Options: faxes.Options{SendAt: &at}})
	if err != nil || o.Status != faxes.Scheduled {
		t.Fatalf("%+v %v", o, err)
	}
	var nb *faxes.NotBeforeError
	if err := e.Svc.Faxes.Deliver(ctx, o.ID); !errors.As(err, &nb) || nb.At.Sub(at).Abs() > time.Microsecond {
		t.Fatalf("early: %v", err)
	}
	clk.Advance(3 * time.Hour)
	if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.Svc.Faxes.Get(ctx, p, o.ID)
	if err != nil || got.Status != faxes.Delivered || got.LatestAttempt == nil || got.LatestAttempt.StartedAt.Before(at.Truncate(time.Microsecond)) || got.FaxedPages != 1 {
		t.Fatalf("%+v %v", got, err)
	}
}

// TestCoverDefaults: cover: true alone takes the owner's sender defaults;
// a field given wins over its default.
func TestCoverDefaults(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	if _, err := e.Svc.Faxes.PutSettings(ctx, p, faxes.Settings{TimeZone: "Asia/Tokyo", Sender: faxes.Sender{Name: "Default Name", Company: "Default Co"}}); err != nil {
		t.Fatal(err)
	}
	o, _, err := e.Svc.Faxes.Send(ctx, p, "cover-1", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1), Cover: true, CoverText: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if cp := o.Options.CoverPage; cp == nil || cp.SenderName != "Default Name" || cp.SenderCompany != "Default Co" || cp.Message != "hello" {
		t.Fatalf("cover %+v", o.Options.CoverPage)
	}
	o, _, err = e.Svc.Faxes.Send(ctx, p, "cover-2", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1),
		Options: faxes.Options{CoverPage: &faxes.CoverPage{SenderName: "Mine"}}})
	if err != nil {
		t.Fatal(err)
	}
	if cp := o.Options.CoverPage; !o.Cover || cp.SenderName != "Mine" || cp.SenderCompany != "Default Co" {
		t.Fatalf("cover %+v", cp)
	}
	// An agent's token cannot read or change the account's defaults.
	agent := core.Principal{OwnerID: p.OwnerID, Kind: core.PrincipalOAuthGrant, Mode: p.Mode, Scopes: []core.Scope{core.ScopeFaxSend, core.ScopeFaxRead, core.ScopeFaxDraft}}
	if _, err := e.Svc.Faxes.GetSettings(ctx, agent); err == nil {
		t.Fatal("an agent read the fax settings")
	}
}

// TestComposeSpooledToFiles: a document above the in-memory bound is
// composed through temporary files, with the same result.
func TestComposeSpooledToFiles(t *testing.T) {
	for _, limit := range []int64{1, 0} { // 1 byte: every document spooled; 0: the default, in memory
		e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.Faxes.ComposeInMemoryBytes = limit }))
		p := e.Principal(t, e.KeyATest)
		o, _, err := e.Svc.Faxes.Send(ctx, p, "spool", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 2), Cover: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Svc.Faxes.Deliver(ctx, o.ID); err != nil {
			t.Fatal(err)
		}
		doc, err := e.Svc.Faxes.FaxedDocument(ctx, p, o.ID)
		if err != nil || doc.Pages != 3 || len(doc.SHA256) != 64 {
			t.Fatalf("limit %d: %+v %v", limit, doc, err)
		}
	}
}
