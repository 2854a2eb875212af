package storetest

import (
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/services"
)

// RunHostTests runs the delegated host/agent conformance tests on one
// store.
func RunHostTests(t *testing.T, st services.Store) {
	t.Run("Hosts", func(t *testing.T) { testHosts(t, st) })
	t.Run("EnrollConcurrent", func(t *testing.T) { testHostEnrollConcurrent(t, st) })
	t.Run("DelegatedAgents", func(t *testing.T) { testDelegatedAgents(t, st) })
	t.Run("DelegatedSends", func(t *testing.T) { testDelegatedSends(t, st) })
	t.Run("JWTIDs", func(t *testing.T) { testJWTIDs(t, st) })
	t.Run("JWTIDsConcurrent", func(t *testing.T) { testJWTIDsConcurrent(t, st) })
}

func activeHost(o *accounts.Owner, sec int, caps ...hosts.Capability) *hosts.Host {
	key, tp := `{"crv":"Ed25519","kty":"OKP","x":"`+core.NewID("k")+`"}`, core.NewID("tp_")
	enrolled := at(sec)
	return &hosts.Host{ID: core.NewID(core.PrefixHost), OwnerID: o.ID, Name: "Laptop", PublicKey: &key, Thumbprint: &tp,
		DefaultCapabilities: caps, Status: hosts.Active, CreatedAt: at(sec), EnrolledAt: &enrolled}
}

func pendingHost(o *accounts.Owner, sec int) *hosts.Host {
	hash, exp := core.NewID("eh_"), at(sec).Add(hosts.EnrollmentTTL)
	return &hosts.Host{ID: core.NewID(core.PrefixHost), OwnerID: o.ID, Name: "Server", DefaultCapabilities: []hosts.Capability{},
		Status: hosts.PendingEnrollment, EnrollmentHash: &hash, EnrollmentExpiresAt: &exp, CreatedAt: at(sec)}
}

func newDelegatedAgent(h *hosts.Host, sec int, status hosts.AgentStatus) *hosts.Agent {
	return &hosts.Agent{ID: core.NewID(core.PrefixDelegatedAgent), HostID: h.ID, OwnerID: h.OwnerID, Name: "Mailer",
		PublicKey: `{"kty":"OKP"}`, Thumbprint: core.NewID("atp_"),
		Requested: []hosts.Capability{hosts.CapValidateFax, hosts.CapSendFax}, Granted: []hosts.Capability{},
		Status: status, UserCodeHash: "uc1", DeviceExpires: at(sec).Add(hosts.DeviceApprovalTTL), ApprovalID: core.NewID(core.PrefixApproval),
		CreatedAt: at(sec)}
}

// testHosts: create with a limit and a unique thumbprint, lookups, enroll
// once, revoke cascading to agents.
func testHosts(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	h := activeHost(o, 1, hosts.CapGetCredits, hosts.CapValidateFax)
	must(t, s.CreateHost(ctx, h, 3))
	got, err := s.GetHost(ctx, h.ID)
	must(t, err)
	wantEqual(t, "GetHost", got, h)
	got, err = s.GetHostByThumbprint(ctx, *h.Thumbprint)
	must(t, err)
	wantEqual(t, "GetHostByThumbprint", got, h)
	dup := activeHost(o, 2)
	dup.Thumbprint = h.Thumbprint
	wantErr(t, "taken thumbprint", s.CreateHost(ctx, dup, 3), core.ErrExists)

	p := pendingHost(o, 2)
	must(t, s.CreateHost(ctx, p, 3))
	got, err = s.GetHostByEnrollment(ctx, *p.EnrollmentHash)
	must(t, err)
	wantEqual(t, "GetHostByEnrollment", got, p)
	// The limit counts live hosts; an unenrolled host whose token expired
	// does not count.
	must(t, s.CreateHost(ctx, activeHost(o, 3), 3))
	wantErr(t, "fourth host", s.CreateHost(ctx, activeHost(o, 4), 3), core.ErrConflict)
	expiredAt := p.EnrollmentExpiresAt.Add(time.Second)
	late := activeHost(o, 0)
	late.CreatedAt = expiredAt
	must(t, s.CreateHost(ctx, late, 3))

	// Enroll: a taken thumbprint leaves the token usable; then once.
	p2 := pendingHost(o, 5)
	must(t, s.CreateHost(ctx, p2, 10))
	_, err = s.EnrollHost(ctx, *p2.EnrollmentHash, "", `{"k":1}`, *h.Thumbprint, at(6))
	wantErr(t, "enroll with a taken thumbprint", err, core.ErrExists)
	_, err = s.EnrollHost(ctx, *p2.EnrollmentHash, "", `{"k":2}`, "tp-new", p2.EnrollmentExpiresAt.Add(time.Second))
	wantErr(t, "enroll after expiry", err, core.ErrConflict)
	e, err := s.EnrollHost(ctx, *p2.EnrollmentHash, "Renamed", `{"k":2}`, "tp-new", at(6))
	must(t, err)
	if e.ID != p2.ID || e.Status != hosts.Active || e.Name != "Renamed" || e.EnrollmentHash != nil || *e.Thumbprint != "tp-new" || !e.EnrolledAt.Equal(at(6)) {
		t.Fatalf("enrolled host = %s", dump(e))
	}
	_, err = s.EnrollHost(ctx, *p2.EnrollmentHash, "", `{"k":3}`, "tp-other", at(7))
	wantErr(t, "enroll twice", err, core.ErrConflict)
	p3 := pendingHost(o, 8)
	must(t, s.CreateHost(ctx, p3, 10))
	e, err = s.EnrollHost(ctx, *p3.EnrollmentHash, "", `{"k":4}`, "tp-3", at(9))
	must(t, err)
	if e.Name != p3.Name {
		t.Fatalf("an enrollment without a name renamed the host to %q", e.Name)
	}

	// Revoke cascades to pending and active agents, not to rejected ones.
	pa, aa, ra := newDelegatedAgent(h, 10, hosts.AgentPending), newDelegatedAgent(h, 10, hosts.AgentActive), newDelegatedAgent(h, 10, hosts.AgentRejected)
	for _, a := range []*hosts.Agent{pa, aa, ra} {
		must(t, s.CreateDelegatedAgent(ctx, a, 10))
	}
	// Read through the joined row first: a store that keeps it (SQLite)
	// must learn of the revocation.
	_, _, err = s.GetDelegatedAgentWithHost(ctx, aa.ID)
	must(t, err)
	other := newOwner(t, s)
	wantErr(t, "revoke another owner's host", s.RevokeHost(ctx, other.ID, h.ID, at(11)), core.ErrNoRows)
	must(t, s.RevokeHost(ctx, o.ID, h.ID, at(11)))
	wantErr(t, "revoke twice", s.RevokeHost(ctx, o.ID, h.ID, at(12)), core.ErrNoRows)
	for a, want := range map[*hosts.Agent]hosts.AgentStatus{pa: hosts.AgentRevoked, aa: hosts.AgentRevoked, ra: hosts.AgentRejected} {
		got, err := s.GetDelegatedAgent(ctx, a.ID)
		must(t, err)
		if got.Status != want {
			t.Fatalf("agent %s after host revocation: %s, want %s", a.Status, got.Status, want)
		}
	}
	gotA, gotH, err := s.GetDelegatedAgentWithHost(ctx, aa.ID)
	must(t, err)
	if gotA.Status != hosts.AgentRevoked || gotH.Status != hosts.Revoked {
		t.Fatalf("joined read after the host's revocation: agent %s, host %s", gotA.Status, gotH.Status)
	}
	must(t, s.TouchHost(ctx, h.ID, at(13)))
	hosts, err := s.ListHosts(ctx, o.ID)
	must(t, err)
	if len(hosts) != 6 {
		t.Fatalf("ListHosts = %d hosts", len(hosts))
	}
	if hosts, _ := s.ListHosts(ctx, other.ID); len(hosts) != 0 {
		t.Fatal("another owner lists hosts")
	}
	_, err = s.GetHost(ctx, "hst_nope")
	wantErr(t, "unknown host", err, core.ErrNoRows)
}

// testHostEnrollConcurrent: one token, many enrollments, one wins.
func testHostEnrollConcurrent(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	p := pendingHost(o, 1)
	must(t, s.CreateHost(ctx, p, 10))
	errs := race(concurrency, func(i int) error {
		_, err := s.EnrollHost(ctx, *p.EnrollmentHash, "", `{"k":1}`, core.NewID("tp_"), at(2))
		return err
	})
	if ok, _ := countErrs(t, "concurrent enroll", errs, core.ErrConflict); ok != 1 {
		t.Fatalf("%d enrollments won", ok)
	}
}

// testDelegatedAgents: limit, unique key, re-issue, tries, decide and
// revoke as compare-and-set.
func testDelegatedAgents(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	h := activeHost(o, 1)
	must(t, s.CreateHost(ctx, h, 10))
	a := newDelegatedAgent(h, 2, hosts.AgentPending)
	must(t, s.CreateDelegatedAgent(ctx, a, 2))
	got, err := s.GetDelegatedAgent(ctx, a.ID)
	must(t, err)
	wantEqual(t, "GetDelegatedAgent", got, a)
	got, err = s.GetDelegatedAgentByThumbprint(ctx, a.Thumbprint)
	must(t, err)
	wantEqual(t, "GetDelegatedAgentByThumbprint", got, a)
	got, gotHost, err := s.GetDelegatedAgentWithHost(ctx, a.ID)
	must(t, err)
	wantEqual(t, "GetDelegatedAgentWithHost agent", got, a)
	wantHost, err := s.GetHost(ctx, h.ID)
	must(t, err)
	wantEqual(t, "GetDelegatedAgentWithHost host", gotHost, wantHost)
	_, _, err = s.GetDelegatedAgentWithHost(ctx, "dag_nope")
	wantErr(t, "agent with host, unknown", err, core.ErrNoRows)
	// joined reads the agent with its host after each change below, and
	// wants what the plain reads say: a store that keeps the joined row
	// (SQLite, core/store/rowcache.go) must have learnt of every change.
	joined := func(step string) {
		t.Helper()
		gotA, gotH, err := s.GetDelegatedAgentWithHost(ctx, a.ID)
		must(t, err)
		wantA, err := s.GetDelegatedAgent(ctx, a.ID)
		must(t, err)
		wantH, err := s.GetHost(ctx, h.ID)
		must(t, err)
		wantEqual(t, "GetDelegatedAgentWithHost agent after "+step, gotA, wantA)
		wantEqual(t, "GetDelegatedAgentWithHost host after "+step, gotH, wantH)
	}
	dup := newDelegatedAgent(h, 3, hosts.AgentPending)
	dup.Thumbprint = a.Thumbprint
	wantErr(t, "taken thumbprint", s.CreateDelegatedAgent(ctx, dup, 10), core.ErrExists)
	b := newDelegatedAgent(h, 3, hosts.AgentPending)
	must(t, s.CreateDelegatedAgent(ctx, b, 2))
	wantErr(t, "third agent", s.CreateDelegatedAgent(ctx, newDelegatedAgent(h, 4, hosts.AgentPending), 2), core.ErrConflict)
	errs := race(concurrency, func(i int) error {
		return s.CreateDelegatedAgent(ctx, newDelegatedAgent(h, 4, hosts.AgentPending), 5)
	})
	if ok, _ := countErrs(t, "concurrent registrations", errs, core.ErrConflict); ok != 3 {
		t.Fatalf("%d registrations past a limit of 5 with 2 live, want 3", ok)
	}

	// Wrong tries count; a re-issue resets them.
	for want := 1; want <= 3; want++ {
		n, err := s.AddDeviceTry(ctx, a.ID)
		must(t, err)
		if n != want {
			t.Fatalf("tries = %d, want %d", n, want)
		}
		joined("a wrong try")
	}
	must(t, s.ReissueDevice(ctx, a.ID, "uc2", "apr_2", at(900)))
	joined("a re-issue")
	got, err = s.GetDelegatedAgent(ctx, a.ID)
	must(t, err)
	if got.DeviceTries != 0 || got.UserCodeHash != "uc2" || got.ApprovalID != "apr_2" || !got.DeviceExpires.Equal(at(900)) {
		t.Fatalf("after reissue: %s", dump(got))
	}
	// An approval on the code before the re-issue is refused.
	grant := []hosts.Capability{hosts.CapValidateFax}
	wantErr(t, "approve with a replaced code", s.DecideDelegatedAgent(ctx, a.ID, a.UserCodeHash, true, grant, at(10)), core.ErrConflict)
	// Decide once: concurrent approvals, one wins.
	errs = race(concurrency, func(i int) error { return s.DecideDelegatedAgent(ctx, a.ID, "uc2", true, grant, at(10)) })
	if ok, _ := countErrs(t, "concurrent decide", errs, core.ErrConflict); ok != 1 {
		t.Fatalf("%d decisions won", ok)
	}
	joined("the approval")
	got, err = s.GetDelegatedAgent(ctx, a.ID)
	must(t, err)
	if got.Status != hosts.AgentActive || !got.ActivatedAt.Equal(at(10)) {
		t.Fatalf("approved agent: %s", dump(got))
	}
	wantEqual(t, "granted", got.Granted, grant)
	wantErr(t, "reissue an active agent", s.ReissueDevice(ctx, a.ID, "uc3", "apr_3", at(900)), core.ErrConflict)
	_, err = s.AddDeviceTry(ctx, a.ID)
	wantErr(t, "try on an active agent", err, core.ErrNoRows)
	must(t, s.DecideDelegatedAgent(ctx, b.ID, "", false, grant, at(11)))
	got, err = s.GetDelegatedAgent(ctx, b.ID)
	must(t, err)
	if got.Status != hosts.AgentRejected || len(got.Granted) != 0 {
		t.Fatalf("declined agent: %s", dump(got))
	}
	// Revoke: pending or active, once.
	must(t, s.TouchDelegatedAgent(ctx, a.ID, at(12)))
	joined("the agent's use")
	must(t, s.RevokeDelegatedAgent(ctx, a.ID, at(13)))
	joined("the agent's revocation")
	wantErr(t, "revoke twice", s.RevokeDelegatedAgent(ctx, a.ID, at(14)), core.ErrConflict)
	// The joined read again, now that the agent's activation, use and
	// revocation times are all set.
	must(t, s.TouchHost(ctx, h.ID, at(12)))
	got, gotHost, err = s.GetDelegatedAgentWithHost(ctx, a.ID)
	must(t, err)
	want, err := s.GetDelegatedAgent(ctx, a.ID)
	must(t, err)
	if want.ActivatedAt == nil || want.LastUsedAt == nil || want.RevokedAt == nil {
		t.Fatalf("revoked agent: %s", dump(want))
	}
	wantEqual(t, "GetDelegatedAgentWithHost revoked agent", got, want)
	wantHost, err = s.GetHost(ctx, h.ID)
	must(t, err)
	if wantHost.LastUsedAt == nil {
		t.Fatalf("touched host: %s", dump(wantHost))
	}
	wantEqual(t, "GetDelegatedAgentWithHost touched host", gotHost, wantHost)
	wantErr(t, "revoke rejected", s.RevokeDelegatedAgent(ctx, b.ID, at(14)), core.ErrConflict)
	wantErr(t, "revoke unknown", s.RevokeDelegatedAgent(ctx, "dag_nope", at(14)), core.ErrNoRows)
	wantErr(t, "decide unknown", s.DecideDelegatedAgent(ctx, "dag_nope", "", true, grant, at(14)), core.ErrNoRows)
	list, err := s.ListDelegatedAgents(ctx, o.ID)
	must(t, err)
	if len(list) != 5 {
		t.Fatalf("ListDelegatedAgents = %d", len(list))
	}
}

func newDelegatedSend(t *testing.T, s services.Store, o *accounts.Owner, sec int) *hosts.Send {
	t.Helper()
	ctx := t.Context()
	doc := newDocument(t, s, o, core.ModeTest)
	appr := &approvals.Approval{ID: core.NewID(core.PrefixApproval), OwnerID: o.ID, Mode: core.ModeTest, Kind: approvals.KindFaxSend, BindingHash: "h",
		RequiresUV: true, Status: approvals.Pending, CreatedAt: at(sec), ExpiresAt: at(sec).Add(hosts.SendTTL)}
	must(t, s.CreateApproval(ctx, appr))
	d := &hosts.Send{ID: core.NewID(core.PrefixDelegatedSend), OwnerID: o.ID, Mode: core.ModeTest, HostID: "hst_x", AgentID: "dag_x",
		ApprovalID: appr.ID, DocumentID: doc.ID, DocumentSHA: doc.SHA256, To: "+14155550123", Country: "US", Pages: 3, Cover: true,
		CoverText: "hi", PriceMicros: 210_000, Currency: core.Currency, CreatedAt: at(sec), ExpiresAt: appr.ExpiresAt}
	// The send options round-trip (the fax created on approval gets them).
	sendAt := at(sec).Add(48 * time.Hour)
	d.Options = faxes.Options{CoverPage: &faxes.CoverPage{RecipientName: "Ada", Subject: "Referral", Message: "hi"}, Header: "Acme",
		Resolution: faxes.ResolutionFine, SendAt: &sendAt, Retry: &faxes.RetryPolicy{Attempts: 4, DelayMinutes: 10}}
	must(t, s.CreateDelegatedSend(ctx, d))
	return d
}

// testDelegatedSends: round trip, pending count, mark sent once.
func testDelegatedSends(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	d := newDelegatedSend(t, s, o, 1)
	got, err := s.GetDelegatedSend(ctx, d.ID)
	must(t, err)
	wantEqual(t, "GetDelegatedSend", got, d)
	got, err = s.GetDelegatedSendByApproval(ctx, d.ApprovalID)
	must(t, err)
	wantEqual(t, "GetDelegatedSendByApproval", got, d)
	d2 := newDelegatedSend(t, s, o, 2)
	n, err := s.CountPendingDelegatedSends(ctx, "dag_x", at(3))
	must(t, err)
	if n != 2 {
		t.Fatalf("pending = %d, want 2", n)
	}
	must(t, s.DecideApproval(ctx, o.ID, d2.ApprovalID, approvals.Declined, nil, at(3)))
	if n, _ := s.CountPendingDelegatedSends(ctx, "dag_x", at(3)); n != 1 {
		t.Fatalf("pending after a decline = %d, want 1", n)
	}
	if n, _ := s.CountPendingDelegatedSends(ctx, "dag_x", d.ExpiresAt); n != 0 {
		t.Fatalf("pending after expiry = %d, want 0", n)
	}
	f := newFax(t, s, newDocument(t, s, o, core.ModeTest))
	errs := race(concurrency, func(i int) error { return s.MarkDelegatedSendSent(ctx, d.ID, f.ID) })
	if ok, _ := countErrs(t, "concurrent mark sent", errs, core.ErrConflict); ok != 1 {
		t.Fatalf("%d marks won", ok)
	}
	got, err = s.GetDelegatedSend(ctx, d.ID)
	must(t, err)
	if got.FaxID == nil || *got.FaxID != f.ID {
		t.Fatalf("fax id = %v", got.FaxID)
	}
	wantErr(t, "mark unknown", s.MarkDelegatedSendSent(ctx, "dsn_nope", f.ID), core.ErrNoRows)
}

// testJWTIDs: once while live, taken over once expired.
func testJWTIDs(t *testing.T, s services.Store) {
	ctx := t.Context()
	must(t, s.InsertJWTID(ctx, "hst_a", "j1", at(0), at(90)))
	wantErr(t, "replay", s.InsertJWTID(ctx, "hst_a", "j1", at(10), at(100)), core.ErrExists)
	must(t, s.InsertJWTID(ctx, "hst_b", "j1", at(10), at(100)))
	// At expiry the record no longer protects anything: taken over, then
	// live again.
	must(t, s.InsertJWTID(ctx, "hst_a", "j1", at(90), at(180)))
	wantErr(t, "replay after takeover", s.InsertJWTID(ctx, "hst_a", "j1", at(100), at(190)), core.ErrExists)
}

func testJWTIDsConcurrent(t *testing.T, s services.Store) {
	ctx := t.Context()
	errs := race(concurrency, func(i int) error { return s.InsertJWTID(ctx, "hst_a", "race", at(0), at(90)) })
	if ok, _ := countErrs(t, "concurrent jti", errs, core.ErrExists); ok != 1 {
		t.Fatalf("%d inserts won", ok)
	}
	must(t, s.InsertJWTID(ctx, "hst_a", "expired", at(0), at(90)))
	errs = race(concurrency, func(i int) error { return s.InsertJWTID(ctx, "hst_a", "expired", at(100), at(190)) })
	if ok, _ := countErrs(t, "concurrent takeover", errs, core.ErrExists); ok != 1 {
		t.Fatalf("%d takeovers won", ok)
	}
}

func testPurgeJWTIDs(t *testing.T, s services.Store) {
	ctx := t.Context()
	must(t, s.InsertJWTID(ctx, "hst_a", "old", at(0), at(90)))
	must(t, s.InsertJWTID(ctx, "hst_a", "live", at(0), at(200)))
	n, err := s.PurgeJWTIDs(ctx, at(100))
	wantPurged(t, "jwt ids", n, err, 1)
	wantErr(t, "live jti after purge", s.InsertJWTID(ctx, "hst_a", "live", at(100), at(300)), core.ErrExists)
	must(t, s.InsertJWTID(ctx, "hst_a", "old", at(100), at(300)))
}

func testPurgeDelegatedSends(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	old := newDelegatedSend(t, s, o, 1)
	young := newDelegatedSend(t, s, o, 5000)
	n, err := s.PurgeDelegatedSends(ctx, at(4000))
	wantPurged(t, "delegated sends", n, err, 1)
	_, err = s.GetDelegatedSend(ctx, old.ID)
	wantErr(t, "purged send", err, core.ErrNoRows)
	_, err = s.GetDelegatedSend(ctx, young.ID)
	must(t, err)
}

func testPurgeUnenrolledHosts(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	stale, fresh, enrolled := pendingHost(o, 0), pendingHost(o, 9000), activeHost(o, 0)
	for _, h := range []*hosts.Host{stale, fresh, enrolled} {
		must(t, s.CreateHost(ctx, h, hosts.MaxHostsPerOwner))
	}
	n, err := s.PurgeUnenrolledHosts(ctx, at(0).Add(hosts.EnrollmentTTL+time.Second))
	wantPurged(t, "unenrolled hosts", n, err, 1)
	_, err = s.GetHost(ctx, stale.ID)
	wantErr(t, "purged host", err, core.ErrNoRows)
	for _, h := range []*hosts.Host{fresh, enrolled} {
		_, err := s.GetHost(ctx, h.ID)
		must(t, err)
	}
}
