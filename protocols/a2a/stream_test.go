package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/consoletest"
)

// patience bounds every wait for a stream's next event: a failure guard,
// not an assertion about time.
const patience = 15 * time.Second

// newStreamEnv is newEnv whose streams poll every 10 ms and whose retries
// are due at once; adjust changes
// the options further.
func newStreamEnv(t *testing.T, adjust func(*app.Options)) *env {
	t.Helper()
	site := consoletest.Start(t, func(base, loopback string) app.Options {
		o := app.Options{BaseURL: base, APIURL: loopback, DataDir: t.TempDir(), Database: consoletest.Database(t),
			Dev: true, MCPOAuth: true, SimTimeScale: 0, InsertOnly: true, Logger: consoletest.Logger(t),
			Core: func(c *services.Config) { c.Tasks.Streams.Poll, c.Faxes.NoRetryDelay = 10*time.Millisecond, true }}
		if adjust != nil {
			adjust(&o)
		}
		return o
	})
	return &env{t: t, a: site.App, site: site, base: site.Base, api: site.App.Svc.Config().APIURL}
}

// events reads a stream in a goroutine, as a client does while it acts
// (pays, delivers) on the side.
type events struct {
	ch   chan a2a.Event
	err  chan error
	done chan struct{}
}

func collect(seq iter.Seq2[a2a.Event, error]) *events {
	s := &events{ch: make(chan a2a.Event, 64), err: make(chan error, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ev, err := range seq {
			if err != nil {
				s.err <- err
				return
			}
			s.ch <- ev
		}
	}()
	return s
}

// next is the stream's next event.
func (s *events) next(t *testing.T) a2a.Event {
	t.Helper()
	select {
	case ev := <-s.ch:
		return ev
	case err := <-s.err:
		t.Fatalf("stream: %v", err)
	case <-s.done:
		select {
		case ev := <-s.ch:
			return ev
		default:
		}
		t.Fatal("the stream ended; an event was expected")
	case <-time.After(patience):
		t.Fatal("no event")
	}
	return nil
}

// fails returns the error the stream ends with.
func (s *events) fails(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.err:
		return err
	case ev := <-s.ch:
		t.Fatalf("an event instead of an error: %T %+v", ev, ev)
	case <-s.done:
		// The collector sends the error, then closes done: both may be
		// ready when this select runs, and select picks at random.
		select {
		case err := <-s.err:
			return err
		default:
		}
		t.Fatal("the stream ended without an error")
	case <-time.After(patience):
		t.Fatal("no error")
	}
	return nil
}

// ended asserts that the stream ended, without an error and with nothing
// more.
func (s *events) ended(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(patience):
		t.Fatal("the stream did not end")
	}
	select {
	case ev := <-s.ch:
		t.Fatalf("an event after the end: %T %+v", ev, ev)
	case err := <-s.err:
		t.Fatalf("the stream ended with %v", err)
	default:
	}
}

// until reads status and artifact updates of task until one has state;
// it returns the updates read. Every update names the task, and no status
// update repeats the previous one.
func (s *events) until(t *testing.T, task a2a.TaskID, state a2a.TaskState) []a2a.Event {
	t.Helper()
	var got []a2a.Event
	var last *a2a.TaskStatusUpdateEvent
	for {
		ev := s.next(t)
		got = append(got, ev)
		switch u := ev.(type) {
		case *a2a.TaskArtifactUpdateEvent:
			if u.TaskID != task || u.ContextID == "" || u.Artifact == nil || !u.LastChunk || u.Append {
				t.Fatalf("artifact update %+v", u)
			}
		case *a2a.TaskStatusUpdateEvent:
			if u.TaskID != task || u.ContextID == "" || u.Status.Timestamp == nil || u.Status.Message == nil {
				t.Fatalf("status update %+v", u)
			}
			if last != nil && last.Status.State == u.Status.State && statusText(u.Status.Message) == statusText(last.Status.Message) {
				t.Fatalf("a repeated status: %s %q", u.Status.State, statusText(u.Status.Message))
			}
			last = u
			if u.Status.State == state {
				return got
			}
		default:
			t.Fatalf("event %T %+v", ev, ev)
		}
	}
}

func statusText(m *a2a.Message) string {
	for _, p := range m.Parts {
		if s, ok := p.Content.(a2a.Text); ok {
			return string(s)
		}
	}
	return ""
}

// artifactUpdate returns the data of the update of artifact name among
// evs (nil if there is none).
func artifactUpdate(evs []a2a.Event, name string) map[string]any {
	for _, ev := range evs {
		if u, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok && u.Artifact.Name == name {
			d, _ := u.Artifact.Parts[0].Data().(map[string]any)
			return d
		}
	}
	return nil
}

func firstTask(t *testing.T, s *events, state a2a.TaskState) *a2a.Task {
	t.Helper()
	task, ok := s.next(t).(*a2a.Task)
	if !ok || task.Status.State != state {
		t.Fatalf("first event %+v, want a task in %s", task, state)
	}
	return task
}

// faxIDOf is the fax of a paid fax task (its status data).
func faxIDOf(t *testing.T, c *a2aclient.Client, id a2a.TaskID) string {
	t.Helper()
	_, data := statusData(t, getTask(t, c, id))
	faxID, _ := data["faxId"].(string)
	if faxID == "" {
		t.Fatalf("task %s has no fax: %v", id, data)
	}
	return faxID
}

// A streamed create_fax (A2A 1.0, a2a-go's client): the task as created,
// the owner pays at the checkout, the simulator fails the first attempt
// and delivers the retry; each change arrives once, the fax artifact
// before the completed status, and the stream ends.
func TestStreamFaxTask(t *testing.T) {
	e := newStreamEnv(t, nil)
	w := e.owner("stream@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 2)

	req := skillMsg("create_fax", map[string]any{"to": "+12125550105", "uploadToken": tok})
	req.Message.ContextID = "streamed"
	s := collect(c.SendStreamingMessage(t.Context(), req))
	task := firstTask(t, s, a2a.TaskStateInputRequired)
	draft := artifactData(task, "fax-draft")
	if task.ContextID != "streamed" || draft["checkoutUrl"] == nil {
		t.Fatalf("task %+v", task)
	}

	pay(t, w, draft["checkoutUrl"].(string))
	evs := s.until(t, task.ID, a2a.TaskStateWorking)
	if d := artifactUpdate(evs, "fax-draft"); d == nil || d["status"] != "paid" {
		t.Fatalf("the paid draft's artifact: %v (%d events)", d, len(evs))
	}
	faxID := faxIDOf(t, c, task.ID)

	if err := e.a.Svc.Faxes.Deliver(t.Context(), faxID); err != nil {
		t.Fatal(err)
	}
	for {
		u := s.until(t, task.ID, a2a.TaskStateWorking)
		if strings.Contains(statusText(u[len(u)-1].(*a2a.TaskStatusUpdateEvent).Status.Message), "retry") {
			break
		}
	}
	if err := e.a.Svc.Faxes.Deliver(t.Context(), faxID); err != nil {
		t.Fatal(err)
	}
	evs = s.until(t, task.ID, a2a.TaskStateCompleted)
	n := len(evs)
	fax, isArtifact := evs[n-2].(*a2a.TaskArtifactUpdateEvent)
	if n < 2 || !isArtifact || fax.Artifact.Name != "fax" || fax.Artifact.Parts[0].Data().(map[string]any)["status"] != "delivered" {
		t.Fatalf("the fax artifact before the completed status: %+v", evs)
	}
	done := evs[n-1].(*a2a.TaskStatusUpdateEvent)
	if text := statusText(done.Status.Message); !strings.Contains(text, "delivered") {
		t.Fatalf("completed: %q", text)
	}
	s.ended(t)
	waitStreams(t, e, 0)

	// A skill that answers a message: one message, then the end.
	s = collect(c.SendStreamingMessage(t.Context(), skillMsg("get_credits", nil)))
	if m, ok := s.next(t).(*a2a.Message); !ok || m.Role != a2a.MessageRoleAgent {
		t.Fatalf("get_credits streamed: %+v", m)
	}
	s.ended(t)
	// A refused message creates nothing and ends the stream with its error.
	n0 := countTasks(t, e)
	s = collect(c.SendStreamingMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "12", "uploadToken": tok})))
	a2aErr(t, "a bad create_fax, streamed", s.fails(t), a2a.ErrInvalidParams, "destination")
	if countTasks(t, e) != n0 {
		t.Fatal("a refused streamed create_fax created a task")
	}
}

// SubscribeToTask: a task created without a stream, followed by a client
// that goes away mid-way (its stream ends on the server, its goroutines
// go), then by another subscription to its end; a final task; another
// owner's task; a token without fax:read.
func TestSubscribeToTask(t *testing.T) {
	e := newStreamEnv(t, nil)
	w := e.owner("resubscribe@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 1)
	res, err := c.SendMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": tok}))
	task := asTask(t, res, err)

	ctx, cancel := context.WithCancel(t.Context())
	s := collect(c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}))
	firstTask(t, s, a2a.TaskStateInputRequired)
	waitStreams(t, e, 1)
	cancel()
	<-s.done
	waitStreams(t, e, 0)
	waitNoStreamGoroutines(t)

	pay(t, w, artifactData(task, "fax-draft")["checkoutUrl"].(string))
	s = collect(c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}))
	working := firstTask(t, s, a2a.TaskStateWorking)
	if _, data := statusData(t, working); data["status"] != "queued" {
		t.Fatalf("resubscribed: %v", data)
	}
	if err := e.a.Svc.Faxes.Deliver(t.Context(), faxIDOf(t, c, task.ID)); err != nil {
		t.Fatal(err)
	}
	evs := s.until(t, task.ID, a2a.TaskStateCompleted)
	if artifactUpdate(evs, "fax") == nil {
		t.Fatalf("no fax artifact: %+v", evs)
	}
	s.ended(t)

	// Final already: the task, and the end.
	s = collect(c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}))
	if final := firstTask(t, s, a2a.TaskStateCompleted); artifactData(final, "fax") == nil {
		t.Fatalf("final task %+v", final)
	}
	s.ended(t)

	other := e.client(e.owner("resubscribe-other@example.com").Token(t, allScopes, e.base+"/a2a"))
	s = collect(other.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}))
	errOther := s.fails(t)
	s = collect(other.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: "tsk_unknown"}))
	errUnknown := s.fails(t)
	a2aErr(t, "another owner's task", errOther, a2a.ErrTaskNotFound, "not found")
	if errOther.Error() != errUnknown.Error() {
		t.Fatalf("another owner's task %q, an unknown one %q", errOther, errUnknown)
	}
	noRead := e.client(w.Token(t, []string{"fax:draft"}, e.base+"/a2a"))
	s = collect(noRead.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}))
	a2aErr(t, "subscribe without fax:read", s.fails(t), a2a.ErrUnauthorized, "fax:read")
	// Streaming a task skill without fax:read is refused before the task
	// exists; streaming a message skill is not.
	n0 := countTasks(t, e)
	s = collect(noRead.SendStreamingMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": tok})))
	a2aErr(t, "stream create_fax without fax:read", s.fails(t), a2a.ErrUnauthorized, "GetTask")
	if countTasks(t, e) != n0 {
		t.Fatal("a refused stream created a task")
	}
	s = collect(noRead.SendStreamingMessage(t.Context(), skillMsg("validate_fax", map[string]any{"to": "+12125550100"})))
	if _, ok := s.next(t).(*a2a.Message); !ok {
		t.Fatal("validate_fax streamed with fax:draft only")
	}
	s.ended(t)
	waitStreams(t, e, 0)
}

// waitStreams waits until the server holds n streams (a stream's slot is
// given back when its handler returns, a moment after the client sees
// the end).
func waitStreams(t *testing.T, e *env, n int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for e.a.Svc.Tasks.OpenStreams("") != n {
		if time.Now().After(deadline) {
			t.Fatalf("the server holds %d streams, want %d", e.a.Svc.Tasks.OpenStreams(""), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// streamFrames are functions that run only while a stream is served:
// a2a-go's SSE loop and its producer, and core's follower.
var streamFrames = []string{"handleStreamingRequest", "eventSeqToSSEDataStream", "(*Stream).Follow", "(*requestHandler).follow"}

// waitNoStreamGoroutines waits until no goroutine is in a stream's code
// (the process's other goroutines come and go on their own).
func waitNoStreamGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(patience)
	buf := make([]byte, 8<<20)
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		leaked := false
		for _, f := range streamFrames {
			leaked = leaked || strings.Contains(stacks, f)
		}
		if !leaked {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stream's goroutines outlived it:\n%s", stacks)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sse is a raw stream: the JSON of each data line, and the comments
// (keep-alives) counted.
type sse struct {
	status   int
	header   http.Header
	data     chan map[string]any
	comments atomic.Int32
}

// stream posts a raw JSON-RPC request and reads its server-sent events
// until the server ends the stream or ctx ends.
func (e *env) stream(ctx context.Context, auth, body string) *sse {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	s := &sse{status: resp.StatusCode, header: resp.Header, data: make(chan map[string]any, 64)}
	go func() {
		defer resp.Body.Close()
		defer close(s.data)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ":"):
				s.comments.Add(1)
			case strings.HasPrefix(line, "data: "):
				var m map[string]any
				if json.Unmarshal([]byte(line[len("data: "):]), &m) == nil {
					s.data <- m
				}
			}
		}
	}()
	return s
}

// result is the next event's JSON-RPC result.
func (s *sse) result(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m, ok := <-s.data:
		if !ok {
			t.Fatal("the stream ended")
		}
		r, ok := m["result"].(map[string]any)
		if !ok {
			t.Fatalf("not a result: %v", m)
		}
		return r
	case <-time.After(patience):
		t.Fatal("no event")
	}
	return nil
}

func (s *sse) ended(t *testing.T) {
	t.Helper()
	select {
	case m, ok := <-s.data:
		if ok {
			t.Fatalf("an event after the end: %v", m)
		}
	case <-time.After(patience):
		t.Fatal("the stream did not end")
	}
}

// until03 reads 0.3 events until a status-update in state; it returns
// the events read.
func (s *sse) until03(t *testing.T, state string) []map[string]any {
	t.Helper()
	var got []map[string]any
	for {
		r := s.result(t)
		got = append(got, r)
		switch r["kind"] {
		case "artifact-update":
		case "status-update":
			st := r["status"].(map[string]any)["state"]
			if final := r["final"] == true; final != (st == "completed" || st == "failed" || st == "canceled") {
				t.Fatalf("status-update %v final %v", st, r["final"])
			}
			if st == state {
				return got
			}
		default:
			t.Fatalf("0.3 event %v", r)
		}
	}
}

// The 0.3 names and shapes: message/stream follows a fax task to its end
// (a final status-update), tasks/resubscribe joins it mid-way.
func TestStream03(t *testing.T) {
	e := newStreamEnv(t, nil)
	w := e.owner("stream03@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 1)
	auth := "Bearer " + w.Token(t, allScopes, e.base+"/a2a")

	s := e.stream(t.Context(), auth, `{"jsonrpc":"2.0","id":"s1","method":"message/stream","params":{"message":{"kind":"message","messageId":"m1","role":"user",`+
		`"parts":[{"kind":"data","data":{"skill":"create_fax","arguments":{"to":"+12125550100","uploadToken":"`+tok+`"}}}]}}}`)
	if s.status != 200 || !strings.HasPrefix(s.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("message/stream: %d %v", s.status, s.header)
	}
	first := s.result(t)
	if first["kind"] != "task" || first["status"].(map[string]any)["state"] != "input-required" {
		t.Fatalf("first 0.3 event %v", first)
	}
	id := a2a.TaskID(first["id"].(string))
	checkout := artifactData(getTask(t, c, id), "fax-draft")["checkoutUrl"].(string)

	// A second client joins with tasks/resubscribe (no A2A-Version: 0.3).
	r := e.stream(t.Context(), auth, `{"jsonrpc":"2.0","id":2,"method":"tasks/resubscribe","params":{"id":"`+string(id)+`"}}`)
	if got := r.result(t); got["kind"] != "task" || got["id"] != string(id) {
		t.Fatalf("tasks/resubscribe %v", got)
	}

	pay(t, w, checkout)
	for _, st := range []*sse{s, r} {
		st.until03(t, "working")
	}
	if err := e.a.Svc.Faxes.Deliver(t.Context(), faxIDOf(t, c, id)); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*sse{s, r} {
		evs := st.until03(t, "completed")
		n := len(evs)
		if n < 2 || evs[n-2]["kind"] != "artifact-update" || evs[n-2]["artifact"].(map[string]any)["name"] != "fax" || evs[n-1]["final"] != true {
			t.Fatalf("0.3 end of stream %v", evs)
		}
		st.ended(t)
	}
}

// The bounds over the wire: a second stream over the owner's limit is a
// JSON-RPC error naming the code; an idle stream sends keep-alives and
// outlives the request body deadline.
func TestStreamBounds(t *testing.T) {
	e := newStreamEnv(t, func(o *app.Options) {
		prev := o.Core
		o.Core = func(c *services.Config) { prev(c); c.Tasks.Streams.PerOwner = 1 }
		o.A2AKeepAlive = 20 * time.Millisecond
		o.Body = web.BodyDeadlines{Body: 300 * time.Millisecond}
	})
	w := e.owner("bounds@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 1)
	res, err := c.SendMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": tok}))
	task := asTask(t, res, err)
	auth := "Bearer " + w.Token(t, allScopes, e.base+"/a2a")

	s := e.stream(t.Context(), auth, `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"`+string(task.ID)+`"}}`)
	s.result(t)
	over := collect(c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}))
	details := a2aErr(t, "a second stream", over.fails(t), a2a.ErrServerError, tasks.CodeTooManyStreams)
	if details["code"] != tasks.CodeTooManyStreams || details["limit"] != float64(1) || details["retryAfterSeconds"] == nil {
		t.Fatalf("details %v", details)
	}
	// A message skill takes no stream.
	m := collect(c.SendStreamingMessage(t.Context(), skillMsg("get_credits", nil)))
	m.next(t)
	m.ended(t)

	// Idle for several body deadlines: keep-alives arrive, and the stream
	// still carries the change that comes after.
	deadline := time.Now().Add(patience)
	for s.comments.Load() < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("%d keep-alives", s.comments.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	pay(t, w, artifactData(task, "fax-draft")["checkoutUrl"].(string))
	for {
		r := s.result(t)
		if r["statusUpdate"] != nil && r["statusUpdate"].(map[string]any)["status"].(map[string]any)["state"] == "TASK_STATE_WORKING" {
			break
		}
	}
}
