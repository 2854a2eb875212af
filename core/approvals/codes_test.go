package approvals_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/internal/testenv"
)

// memInbox keeps approvals in memory: the code-confirmed mechanism needs
// nothing else of a store. The embedded core.Tx is never called; its
// transactions are the store itself, and its events a list.
type memInbox struct {
	core.Tx
	rows   map[string]*approvals.Approval
	events []events.Type
}

func (m *memInbox) InTx(ctx context.Context, fn func(core.Tx) error) error { return fn(m) }

func (m *memInbox) AppendEvent(_ context.Context, e *events.Event) error {
	m.events = append(m.events, e.Type)
	return nil
}

func (m *memInbox) CreateApproval(_ context.Context, a *approvals.Approval) error {
	c := *a
	m.rows[a.ID] = &c
	return nil
}

func (m *memInbox) GetApproval(_ context.Context, ownerID, id string) (*approvals.Approval, error) {
	a, ok := m.rows[id]
	if !ok || a.OwnerID != ownerID {
		return nil, core.ErrNoRows
	}
	c := *a
	return &c, nil
}

func (m *memInbox) ListApprovals(context.Context, string, approvals.Status, int) ([]approvals.Approval, error) {
	return nil, errors.New("not used")
}

func (m *memInbox) FindApproval(context.Context, string, approvals.Kind, string) (*approvals.Approval, error) {
	return nil, errors.New("not used")
}

func (m *memInbox) DecideApproval(_ context.Context, ownerID, id string, status approvals.Status, decision []byte, at time.Time) error {
	a, ok := m.rows[id]
	if !ok || a.OwnerID != ownerID {
		return core.ErrNoRows
	}
	if a.Status != approvals.Pending || !at.Before(a.ExpiresAt) {
		return core.ErrConflict
	}
	a.Status, a.Decision, a.DecidedAt = status, decision, &at
	return nil
}

// memPort is one request's row as a feature would keep it.
type memPort struct {
	tries     int
	addTries  int
	recorded  bool
	approved  bool
	granted   []string
	recordErr error
}

func (p *memPort) AddTry(context.Context) (int, error) {
	p.tries++
	p.addTries++
	return p.tries, nil
}

func (p *memPort) Record(_ context.Context, approve bool, granted []string) error {
	if p.recordErr != nil {
		return p.recordErr
	}
	p.recorded, p.approved, p.granted = true, approve, granted
	return nil
}

const (
	codeExpired = "x_expired"
	codeDecided = "x_decided"
	codeWrong   = "x_wrong_code"
	codeTooMany = "x_too_many_tries"
	codeWiden   = "x_not_requested"
	codeDoor    = "x_door_conflict"
	codeEmpty   = "x_empty"
	maxTries    = 3
)

func testRules(f approvals.CodeFormat) approvals.CodeRules[string] {
	return approvals.CodeRules[string]{
		Kind: "test_kind", Format: f, MaxTries: maxTries, GrantKey: "items",
		Words: approvals.CodeWords{
			Expired: codeExpired, ExpiredMsg: "expired",
			Decided: codeDecided, DecidedMsg: "this request was %s already",
			WrongCode:    codeWrong,
			TooManyTries: codeTooMany, TooManyMsg: "too many",
			NotRequested: codeWiden, NotRequestedMsg: "%s was not asked for",
			InboxApproveMsg: "use the page",
		},
		CheckGrant: func(asked []string) error {
			if len(asked) == 0 {
				return core.Errorf(core.KindInvalid, codeEmpty, "grant something")
			}
			return nil
		},
	}
}

type fixture struct {
	clk   *testenv.Clock
	store *memInbox
	m     *approvals.CodeApproval[string]
}

func newFixture(t *testing.T, f approvals.CodeFormat) *fixture {
	t.Helper()
	clk := testenv.NewClock()
	store := &memInbox{rows: map[string]*approvals.Approval{}}
	inbox := approvals.New(core.Config{Now: clk.Now}, approvals.Deps{Store: store})
	return &fixture{clk: clk, store: store, m: approvals.NewCodeApproval(inbox, testRules(f))}
}

// start opens a request asking for requested, as a feature would.
func (fx *fixture) start(t *testing.T, requested ...string) (string, approvals.CodeState[string]) {
	t.Helper()
	code, hash, a, err := fx.m.Start(t.Context(), nil, approvals.Request{OwnerID: "own_1", Summary: "asks", Binding: "req_1", TTL: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if a.Kind != "test_kind" || a.Status != approvals.Pending {
		t.Fatalf("inbox copy = %+v", a)
	}
	return code, approvals.CodeState[string]{OwnerID: "own_1", Status: "pending", Pending: true, ExpiresAt: a.ExpiresAt,
		CodeHash: hash, Requested: requested, ApprovalID: a.ID}
}

func TestCodeFormats(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      approvals.CodeFormat
		shape  func(string) bool
		stored func(string) string // the hash stored before the mechanism
		loose  func(string) string
	}{
		{
			name: "six digits", f: approvals.SixDigitCodes(),
			shape:  func(c string) bool { return len(c) == 6 && strings.Trim(c, "0123456789") == "" },
			stored: core.HashSecret,
			loose:  func(c string) string { return " " + c[:3] + " " + c[3:] },
		},
		{
			name: "device letters", f: approvals.DeviceCodes(),
			shape: func(c string) bool {
				return len(c) == 9 && c[4] == '-' && strings.Trim(c[:4]+c[5:], "BCDFGHJKLMNPQRSTVWXZ") == ""
			},
			stored: func(c string) string { return core.HashSecret("device:" + strings.ReplaceAll(c, "-", "")) },
			loose:  func(c string) string { return strings.ToLower(c[:4]) + " " + c[5:] },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, hash := tc.f.New()
			if !tc.shape(code) {
				t.Fatalf("code %q", code)
			}
			if hash != tc.stored(code) {
				t.Fatal("the hash differs from the one stored before: codes issued then would stop matching")
			}
			if tc.f.Hash(tc.loose(code)) != hash {
				t.Fatalf("loosely typed %q does not match %q", tc.loose(code), code)
			}
		})
	}
	if approvals.SixDigitCodes().Hash("123456") == approvals.DeviceCodes().Hash("123456") {
		t.Fatal("the kinds' hashes are not kept apart")
	}
}

func TestCodeDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		approve bool
		code    func(right string) string
		grant   []string
		setup   func(fx *fixture, st *approvals.CodeState[string], p *memPort)
		want    string // error code; "" for success
		granted []string
		tries   int // AddTry calls
	}{
		{name: "approve all", approve: true, granted: []string{"a", "b", "c"}},
		{name: "approve narrowed, request's order, no duplicates", approve: true, grant: []string{"c", "a", "c"}, granted: []string{"a", "c"}},
		{name: "loose code", approve: true, code: func(c string) string { return " " + strings.ToLower(c) + " " }, granted: []string{"a", "b", "c"}},
		{name: "widen", approve: true, grant: []string{"a", "z"}, want: codeWiden},
		{name: "grant checked", approve: true, grant: []string{}, want: codeEmpty},
		{name: "wrong code", approve: true, code: func(string) string { return "BBBB-BBBB" }, want: codeWrong, tries: 1},
		{name: "over-long code", approve: true, code: func(c string) string { return c + strings.Repeat(" ", 64) }, want: codeWrong, tries: 1},
		{name: "last wrong code", approve: true, code: func(string) string { return "BBBB-BBBB" }, want: codeTooMany, tries: 1,
			setup: func(_ *fixture, st *approvals.CodeState[string], p *memPort) {
				st.Tries, p.tries = maxTries-1, maxTries-1
			}},
		{name: "tries used up, even with the right code", approve: true, want: codeTooMany,
			setup: func(_ *fixture, st *approvals.CodeState[string], _ *memPort) { st.Tries = maxTries }},
		{name: "expired by the clock", approve: true, want: codeExpired,
			setup: func(fx *fixture, _ *approvals.CodeState[string], _ *memPort) { fx.clk.Advance(10 * time.Minute) }},
		{name: "stored expired", want: codeExpired,
			setup: func(_ *fixture, st *approvals.CodeState[string], _ *memPort) { st.Pending, st.Expired = false, true }},
		{name: "decided", approve: true, want: codeDecided,
			setup: func(_ *fixture, st *approvals.CodeState[string], _ *memPort) {
				st.Pending, st.Status = false, "approved"
			}},
		{name: "decline needs no code", code: func(string) string { return "" }},
		{name: "decided meanwhile: the door's error", approve: true, want: codeDoor,
			setup: func(_ *fixture, _ *approvals.CodeState[string], p *memPort) {
				p.recordErr = core.Errorf(core.KindConflict, codeDoor, "decided meanwhile")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, approvals.DeviceCodes())
			right, st := fx.start(t, "a", "b", "c")
			p := &memPort{}
			if tc.setup != nil {
				tc.setup(fx, &st, p)
			}
			code := right
			if tc.code != nil {
				code = tc.code(right)
			}
			granted, err := fx.m.Decide(t.Context(), st, p, approvals.CodeDecision[string]{Approve: tc.approve, Code: code, Grant: tc.grant})
			if p.addTries != tc.tries {
				t.Errorf("wrong tries counted: %d, want %d", p.addTries, tc.tries)
			}
			copyOf, gerr := fx.store.GetApproval(t.Context(), "own_1", st.ApprovalID)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if tc.want != "" {
				testenv.WantCode(t, err, tc.want)
				if p.recorded || copyOf.Status != approvals.Pending {
					t.Fatalf("a refused decision moved something: port %+v, copy %s", p, copyOf.Status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !p.recorded || p.approved != tc.approve || !slices.Equal(p.granted, tc.granted) || !slices.Equal(granted, tc.granted) {
				t.Fatalf("recorded %+v, returned %v; want approve=%v %v", p, granted, tc.approve, tc.granted)
			}
			wantStatus, wantItems := approvals.Declined, []string{}
			if tc.approve {
				wantStatus, wantItems = approvals.Approved, tc.granted
			}
			var data struct{ Items []string }
			if copyOf.Status != wantStatus || json.Unmarshal(copyOf.Decision, &data) != nil || !slices.Equal(data.Items, wantItems) {
				t.Fatalf("inbox copy %s %s", copyOf.Status, copyOf.Decision)
			}
		})
	}
}

func TestCodeWrongCodeSaysTriesLeft(t *testing.T) {
	fx := newFixture(t, approvals.SixDigitCodes())
	_, st := fx.start(t, "a")
	_, err := fx.m.Decide(t.Context(), st, &memPort{}, approvals.CodeDecision[string]{Approve: true, Code: "x"})
	if e := core.AsError(err); e.Code != codeWrong || !strings.Contains(e.Message, "2 tries left") {
		t.Fatalf("err = %v", err)
	}
	if fx.m.TriesLeft(st) != maxTries {
		t.Fatal("tries left of a fresh request")
	}
	st.Tries = maxTries + 2
	if fx.m.TriesLeft(st) != 0 {
		t.Fatal("tries left never go below zero")
	}
	st.Pending, st.Status = false, "declined"
	if err := fx.m.Open(st); core.ErrorCode(err) != codeDecided || !strings.Contains(err.Error(), "declined already") {
		t.Fatalf("open = %v", err)
	}
}

func TestCodeDecline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(fx *fixture, st *approvals.CodeState[string])
		recorded bool
	}{
		{name: "pending", recorded: true},
		{name: "pending past expiry: still declinable", recorded: true,
			setup: func(fx *fixture, _ *approvals.CodeState[string]) { fx.clk.Advance(time.Hour) }},
		{name: "decided: left as it is",
			setup: func(_ *fixture, st *approvals.CodeState[string]) { st.Pending, st.Status = false, "approved" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, approvals.SixDigitCodes())
			_, st := fx.start(t, "a")
			if tc.setup != nil {
				tc.setup(fx, &st)
			}
			p := &memPort{}
			if err := fx.m.Decline(t.Context(), st, p); err != nil {
				t.Fatal(err)
			}
			if p.recorded != tc.recorded || p.approved {
				t.Fatalf("port %+v", p)
			}
		})
	}
}

func TestCodeRetireAndHandler(t *testing.T) {
	fx := newFixture(t, approvals.SixDigitCodes())
	_, st := fx.start(t, "a")
	for range 2 { // retiring twice is not an error
		if err := fx.m.Retire(t.Context(), nil, "own_1", st.ApprovalID); err != nil {
			t.Fatal(err)
		}
	}
	if a, _ := fx.store.GetApproval(t.Context(), "own_1", st.ApprovalID); a.Status != approvals.Expired {
		t.Fatalf("retired copy %s", a.Status)
	}
	if err := fx.m.Retire(t.Context(), nil, "own_1", ""); err != nil {
		t.Fatal(err)
	}

	var declined []string
	h := fx.m.Handler(func(_ context.Context, a *approvals.Approval) error {
		declined = append(declined, a.ID)
		return nil
	})
	a := &approvals.Approval{ID: "apr_1"}
	testenv.WantCode(t, h.Check(t.Context(), a), core.CodeInvalidRequest)
	if h.Approve != nil {
		t.Fatal("the inbox records these approvals itself only through Decide")
	}
	_ = h.Decided(t.Context(), a, true)
	_ = h.Decided(t.Context(), a, false)
	if !slices.Equal(declined, []string{"apr_1"}) {
		t.Fatalf("declined %v", declined)
	}
}
