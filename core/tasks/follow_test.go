package tasks_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/internal/testenv"
)

// patience bounds how long a test waits for the follower goroutine to
// take a tick or hand over a view: a failure guard, never an assertion
// about time (the follower's time is the test clock and the ticks).
const patience = 10 * time.Second

// streamEnv is a clocked environment without workers whose task streams
// poll when the test sends a tick.
func streamEnv(t *testing.T, conf func(*tasks.StreamConfig)) (*testenv.Env, *testenv.Clock, chan time.Time) {
	t.Helper()
	ticks := make(chan time.Time)
	e, clk := testenv.Clocked(t, testenv.WithConfig(func(c *services.Config) {
		c.Tasks.Streams.Ticker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
		if conf != nil {
			conf(&c.Tasks.Streams)
		}
	}))
	return e, clk, ticks
}

// follower runs Stream.Follow in a goroutine, as the A2A handler does,
// and hands each view over an unbuffered channel: while the test has not
// taken a view, the follower cannot take a tick.
type follower struct {
	ticks chan time.Time
	views chan *tasks.View
	errs  chan error
	done  chan struct{}
}

func follow(t *testing.T, ctx context.Context, st *tasks.Stream, first *tasks.View, ticks chan time.Time) *follower {
	// A test that fails leaves no follower behind for the next one.
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	f := &follower{ticks: ticks, views: make(chan *tasks.View), errs: make(chan error, 1), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer st.Close()
		for v, err := range st.Follow(ctx, first) {
			if err != nil {
				f.errs <- err
				return
			}
			select {
			case f.views <- v:
			case <-ctx.Done():
				return
			}
		}
	}()
	return f
}

// next is the next view the follower yields.
func (f *follower) next(t *testing.T) *tasks.View {
	t.Helper()
	select {
	case v := <-f.views:
		return v
	case err := <-f.errs:
		t.Fatalf("follow: %v", err)
	case <-f.done:
		t.Fatal("the stream ended; a view was expected")
	case <-time.After(patience):
		t.Fatal("no view")
	}
	return nil
}

// tick makes the follower poll once. The tick is taken only when the
// follower is back waiting, so a view it yielded instead is a failure.
func (f *follower) tick(t *testing.T) {
	t.Helper()
	select {
	case f.ticks <- time.Time{}:
	case v := <-f.views:
		t.Fatalf("an unexpected view: %s %q", v.State, v.Message)
	case <-f.done:
		t.Fatal("the stream ended")
	case <-time.After(patience):
		t.Fatal("the follower took no tick")
	}
}

// quiet asserts that a poll yields nothing: the next tick is taken. (The
// follower is then busy with that next tick, which sees what the test
// does meanwhile: step and end allow for it.)
func (f *follower) quiet(t *testing.T) {
	t.Helper()
	f.tick(t)
	f.tick(t)
}

// step returns what the follower yields at its next poll, or at the poll
// it is busy with.
func (f *follower) step(t *testing.T) *tasks.View {
	t.Helper()
	select {
	case f.ticks <- time.Time{}:
		return f.next(t)
	case v := <-f.views:
		return v
	case <-f.done:
		t.Fatal("the stream ended; a view was expected")
	case <-time.After(patience):
		t.Fatal("the follower took no tick")
	}
	return nil
}

// delivered steps until the fax task completes: a poll may fall inside
// the attempt and see the fax sending first.
func (f *follower) delivered(t *testing.T) *tasks.View {
	t.Helper()
	for {
		v := f.step(t)
		if v.State == tasks.Completed {
			return v
		}
		if v.State != tasks.Working || v.Fax == nil || v.Fax.Status != faxes.Sending {
			t.Fatalf("before delivery: %s %q", v.State, v.Message)
		}
	}
}

// end makes the follower poll, unless the poll it is busy with ended the
// stream already, and asserts that the stream ended.
func (f *follower) end(t *testing.T) {
	t.Helper()
	select {
	case f.ticks <- time.Time{}:
	case <-f.done:
	case v := <-f.views:
		t.Fatalf("an unexpected view: %s %q", v.State, v.Message)
	case <-time.After(patience):
		t.Fatal("the follower took no tick")
	}
	f.ended(t)
}

// ended asserts that the stream ended without an error.
func (f *follower) ended(t *testing.T) {
	t.Helper()
	select {
	case <-f.done:
		select {
		case err := <-f.errs:
			t.Fatalf("the stream ended with %v", err)
		default:
		}
	case v := <-f.views:
		t.Fatalf("a view after the end: %s %q", v.State, v.Message)
	case <-time.After(patience):
		t.Fatal("the stream did not end")
	}
}

// faxOfTask is the id of the fax a paid fax task follows.
func faxOfTask(t *testing.T, v *tasks.View) string {
	t.Helper()
	if v.Fax == nil {
		t.Fatalf("task %s has no fax (%s)", v.ID, v.State)
	}
	return v.Fax.ID
}

// A streamed fax task: the task as created, then each change of its
// status as the owner pays and the fax is retried and delivered, then the
// end. Nothing is yielded while nothing changes.
func TestFollowFaxTask(t *testing.T) {
	e, _, ticks := streamEnv(t, nil)
	p := e.Principal(t, e.KeyATest)
	st, err := e.Svc.Tasks.OpenStream(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	// Created after the stream's mark: its events are the stream's.
	v := startFaxTask(t, e, p, "+12125550105", 2) // the first attempt fails, the retry is delivered
	f := follow(t, ctx, st, v, ticks)
	wantState(t, "first", f.next(t), tasks.InputRequired, "")
	if n := e.Svc.Tasks.OpenStreams(p.OwnerID); n != 1 {
		t.Fatalf("open streams %d", n)
	}
	f.quiet(t)

	payTask(t, e, p, v)
	paid := f.step(t)
	wantState(t, "paid", paid, tasks.Working, "")
	if paid.Fax == nil || paid.Fax.Status != faxes.Queued || !strings.Contains(paid.Message, "queued") {
		t.Fatalf("paid: %+v %q", paid.Fax, paid.Message)
	}
	f.quiet(t)

	faxID := faxOfTask(t, paid)
	if err := e.Svc.Faxes.Deliver(ctx, faxID); err != nil {
		t.Fatal(err)
	}
	// The poll may fall between the attempt's start and its end: the
	// fax is seen sending, then queued for its retry.
	for {
		retry := f.step(t)
		wantState(t, "retry", retry, tasks.Working, "")
		if strings.Contains(retry.Message, "retry") {
			break
		}
		if retry.Fax.Status != faxes.Sending {
			t.Fatalf("before the retry: %s %q", retry.Fax.Status, retry.Message)
		}
	}
	if err := e.Svc.Faxes.Deliver(ctx, faxID); err != nil {
		t.Fatal(err)
	}
	done := f.delivered(t)
	if done.Fax.Status != faxes.Delivered {
		t.Fatalf("fax %s", done.Fax.Status)
	}
	f.ended(t)
	if n := e.Svc.Tasks.OpenStreams(""); n != 0 {
		t.Fatalf("open streams after the end: %d", n)
	}
}

// Subscribing: to a task created without a stream, to a task already
// final (it is yielded and the stream ends), to another owner's task or
// an unknown one (not_found, and the stream's slot is given back).
func TestSubscribeTask(t *testing.T) {
	e, _, ticks := streamEnv(t, nil)
	p := e.Principal(t, e.KeyATest)
	v := startFaxTask(t, e, p, "+12125550100", 1)

	st, got, err := e.Svc.Tasks.Subscribe(ctx, p, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	f := follow(t, ctx, st, got, ticks)
	wantState(t, "subscribed", f.next(t), tasks.InputRequired, "")
	if _, err := e.Svc.Tasks.Cancel(ctx, p, v.ID); err != nil {
		t.Fatal(err)
	}
	// A canceled draft writes no event; another event of the owner makes
	// the stream look again.
	appendEvents(t, e, p, 1)
	wantState(t, "canceled", f.step(t), tasks.Canceled, "canceled")
	f.ended(t)

	// Already final: the task, then the end, without a tick.
	st, got, err = e.Svc.Tasks.Subscribe(ctx, p, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	f = follow(t, ctx, st, got, ticks)
	wantState(t, "final", f.next(t), tasks.Canceled, "canceled")
	f.ended(t)

	pb := e.Principal(t, e.KeyBTest)
	live := e.Principal(t, e.KeyALive)
	for name, q := range map[string]core.Principal{"another owner": pb, "the other mode": live} {
		_, _, err := e.Svc.Tasks.Subscribe(ctx, q, v.ID)
		if core.ErrorKind(err) != core.KindNotFound {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := e.Svc.Tasks.Subscribe(ctx, p, "tsk_unknown"); core.ErrorKind(err) != core.KindNotFound {
		t.Errorf("unknown task: %v", err)
	}
	if n := e.Svc.Tasks.OpenStreams(""); n != 0 {
		t.Fatalf("refused subscriptions hold %d streams", n)
	}
	// A view of another owner's task is refused by Follow itself.
	st, err = e.Svc.Tasks.OpenStream(ctx, pb)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, err := range st.Follow(ctx, v) {
		if err == nil || !strings.Contains(err.Error(), "not a task of the stream's principal") {
			t.Fatalf("following another owner's view: %v", err)
		}
	}
}

// appendEvents writes n events of p's that concern no task (received
// faxes of another subject), as a busy account would.
func appendEvents(t *testing.T, e *testenv.Env, p core.Principal, n int) {
	t.Helper()
	for i := range n {
		if err := events.Append(ctx, e.Store, p.OwnerID, p.Mode, events.InboundReceived, fmt.Sprintf("inb_%d", i), map[string]int{"i": i}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// A burst of the owner's events that changes nothing about the task
// yields nothing (more events than one read takes included); the change
// that follows is yielded once.
func TestFollowIgnoresUnrelatedEvents(t *testing.T) {
	e, _, ticks := streamEnv(t, nil)
	p := e.Principal(t, e.KeyATest)
	st, err := e.Svc.Tasks.OpenStream(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	v := startFaxTask(t, e, p, "+12125550100", 1)
	f := follow(t, ctx, st, v, ticks)
	f.next(t)
	appendEvents(t, e, p, 250)
	f.quiet(t)
	appendEvents(t, e, p, 3)
	f.quiet(t)
	// Another owner's events are not this stream's.
	appendEvents(t, e, e.Principal(t, e.KeyBTest), 5)
	f.quiet(t)

	payTask(t, e, p, v)
	appendEvents(t, e, p, 120)
	wantState(t, "paid", f.step(t), tasks.Working, "")
	appendEvents(t, e, p, 10)
	f.quiet(t)
	if err := e.Svc.Faxes.Deliver(ctx, faxOfTask(t, getTask(t, e, p, v.ID))); err != nil {
		t.Fatal(err)
	}
	f.delivered(t)
	f.ended(t)
}

// What writes no event still arrives, at the next refresh: a draft that
// expires (24 hours after it was drafted: the stream is made to last
// longer). Between refreshes, without events, the task is not derived.
func TestFollowRefreshes(t *testing.T) {
	e, clk, ticks := streamEnv(t, func(c *tasks.StreamConfig) { c.Refresh, c.MaxDuration = 10*time.Second, 48*time.Hour })
	p := e.Principal(t, e.KeyATest)
	st, err := e.Svc.Tasks.OpenStream(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	v := startFaxTask(t, e, p, "+12125550100", 1)
	f := follow(t, ctx, st, v, ticks)
	f.next(t)
	// Canceled behind the stream's back: no event, no refresh due yet.
	if _, err := e.Svc.Tasks.Cancel(ctx, p, v.ID); err != nil {
		t.Fatal(err)
	}
	f.quiet(t)
	clk.Advance(10 * time.Second)
	wantState(t, "refreshed", f.step(t), tasks.Canceled, "canceled")
	f.ended(t)

	st, err = e.Svc.Tasks.OpenStream(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	v = startFaxTask(t, e, p, "+12125550100", 1)
	f = follow(t, ctx, st, v, ticks)
	f.next(t)
	clk.Advance(v.Draft.ExpiresAt.Sub(clk.Now()) + time.Second)
	wantState(t, "expired", f.step(t), tasks.Failed, "draft_expired")
	f.ended(t)
}

// A number task streams its checkout, its provisioning and its end.
func TestFollowNumberTask(t *testing.T) {
	e, _, ticks := streamEnv(t, nil)
	p := e.Principal(t, e.KeyATest)
	st, err := e.Svc.Tasks.OpenStream(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.Svc.Tasks.StartNumberTask(ctx, p, "buy_number", "", numbers.BuyRequest{Number: "+13125550130"})
	if err != nil {
		t.Fatal(err)
	}
	f := follow(t, ctx, st, v, ticks)
	wantState(t, "reserved", f.next(t), tasks.InputRequired, "")
	cs, err := e.Svc.Checkout.StartNumber(ctx, p, v.SubjectID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, e, p, 1) // until the number feature writes its own events
	wantState(t, "paid", f.step(t), tasks.Working, "")
	// What the order_number job does; the simulator activates at once.
	if err := e.Svc.Numbers.PlaceOrder(ctx, v.SubjectID); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, e, p, 1)
	done := f.step(t)
	wantState(t, "active", done, tasks.Completed, "")
	if done.Number == nil || done.Number.Status != numbers.Active {
		t.Fatalf("number %+v", done.Number)
	}
	f.ended(t)
}

// The bounds: streams per owner and per process, the scope, the maximum
// duration, the shutdown, and a client that goes away.
func TestStreamBounds(t *testing.T) {
	e, clk, ticks := streamEnv(t, func(c *tasks.StreamConfig) { c.PerOwner, c.Total = 2, 3 })
	p := e.Principal(t, e.KeyATest)
	pb := e.Principal(t, e.KeyBTest)
	open := func(q core.Principal) (*tasks.Stream, error) { return e.Svc.Tasks.OpenStream(ctx, q) }

	a1, err := open(p)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := open(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = open(p)
	testenv.WantCode(t, err, tasks.CodeTooManyStreams)
	if e := core.AsError(err); e.Kind != core.KindRateLimited || e.Fields["limit"] != 2 || e.RetryAfterSeconds == 0 {
		t.Fatalf("over the owner's limit: %+v", e)
	}
	b1, err := open(pb)
	if err != nil {
		t.Fatalf("another owner's first stream: %v", err)
	}
	_, err = open(e.Principal(t, e.KeyALive))
	testenv.WantCode(t, err, tasks.CodeTooManyStreams) // the process is full (3)
	a2.Close()
	a2.Close() // twice gives back one slot
	if n := e.Svc.Tasks.OpenStreams(""); n != 2 {
		t.Fatalf("open streams %d", n)
	}
	a3, err := open(p)
	if err != nil {
		t.Fatalf("after a close: %v", err)
	}
	for _, s := range []*tasks.Stream{a1, a3, b1} {
		s.Close()
	}

	// Following needs fax:read, as GetTask.
	draftOnly := p
	draftOnly.Scopes = []core.Scope{core.ScopeFaxDraft}
	_, err = open(draftOnly)
	testenv.WantCode(t, err, core.CodeInsufficientScope)
	if e := core.AsError(err); !strings.Contains(e.Message, "GetTask") || e.Fields["required_scope"] != string(core.ScopeFaxRead) {
		t.Fatalf("scope refusal %+v", e)
	}

	// The maximum duration ends a stream without an error.
	st, err := open(p)
	if err != nil {
		t.Fatal(err)
	}
	v := startFaxTask(t, e, p, "+12125550100", 1)
	f := follow(t, ctx, st, v, ticks)
	f.next(t)
	f.quiet(t)
	clk.Advance(tasks.DefaultStreamMaxDuration)
	f.end(t)

	// Shutdown ends every stream.
	st, v2, err := e.Svc.Tasks.Subscribe(ctx, p, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	f = follow(t, ctx, st, v2, ticks)
	f.next(t)
	cctx, cancel := context.WithCancel(ctx)
	st2, v3, err := e.Svc.Tasks.Subscribe(cctx, pb, startFaxTask(t, e, pb, "+12125550100", 1).ID)
	if err != nil {
		t.Fatal(err)
	}
	g := follow(t, cctx, st2, v3, ticks)
	g.next(t)
	// The client goes away: its stream ends and gives its slot back, and
	// the follower's goroutine is gone.
	cancel()
	g.ended(t)
	if n := e.Svc.Tasks.OpenStreams(pb.OwnerID); n != 0 {
		t.Fatalf("the gone client's stream holds its slot (%d)", n)
	}
	e.Svc.Tasks.CloseStreams()
	f.ended(t)
	waitNoFollowers(t)
	if n := e.Svc.Tasks.OpenStreams(""); n != 0 {
		t.Fatalf("open streams after shutdown: %d", n)
	}
}

// waitNoFollowers waits until no goroutine is in Stream.Follow (one that
// ends is gone a moment after its stream says so).
func waitNoFollowers(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(patience)
	buf := make([]byte, 8<<20)
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "(*Stream).Follow") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a follower outlived its stream:\n%s", stacks)
		}
		time.Sleep(time.Millisecond)
	}
}

// A credit purchase streams its cart, then, after the agent's mandate,
// the owner's approval page (the same state, other words), then its
// receipt. The approval and the charge write no event here: the refresh
// brings them (the ticker is a real one; the clock moves the refreshes).
func TestFollowCreditPurchase(t *testing.T) {
	e := newAP2Env(t)
	st, err := e.svc.Tasks.OpenStream(ctx, e.p)
	if err != nil {
		t.Fatal(err)
	}
	v := e.start(t, "pack_10")
	f := follow(t, ctx, st, v, nil)
	wantState(t, "cart", f.next(t), tasks.InputRequired, "")
	_, a := e.submit(t, v, mandateFor(v, "pm_follow", "tok_visa"))
	e.clk.Advance(tasks.DefaultStreamRefresh)
	approval := f.next(t)
	wantState(t, "approval", approval, tasks.InputRequired, "")
	if approval.ApprovalURL == "" || !strings.Contains(approval.Message, approval.ApprovalURL) {
		t.Fatalf("approval view %q %q", approval.ApprovalURL, approval.Message)
	}
	if _, err := e.svc.Approvals.Decide(ctx, e.OwnerA.ID, a.ID, approve(true, a)); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(tasks.DefaultStreamRefresh)
	done := f.next(t)
	if done.State == tasks.Working { // seen between the approval and the charge
		done = f.next(t)
	}
	wantState(t, "paid", done, tasks.Completed, "")
	if done.Receipt == nil || done.Receipt.PackID != "pack_10" {
		t.Fatalf("receipt %+v", done.Receipt)
	}
	f.ended(t)
}
