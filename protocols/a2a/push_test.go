package a2a_test

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/faxhub/faxhub/core"
	coreevents "github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/core/webhooks"
	"github.com/faxhub/faxhub/internal/consoletest"
)

// pushReceiver records the notifications it gets and answers status
// (200 when unset).
type pushReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []pushCall
	status int
}

type pushCall struct {
	header http.Header
	body   []byte
}

func newPushReceiver(t *testing.T) *pushReceiver {
	r := &pushReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, pushCall{header: req.Header.Clone(), body: b})
		status := cmp.Or(r.status, http.StatusOK)
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *pushReceiver) calls() []pushCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// pump does what the dispatcher and the webhook workers do (the test env
// inserts jobs without working them): it fans the marked events out and
// makes every pending push delivery's attempt, oldest first.
func pump(t *testing.T, e *env, ownerID string) {
	t.Helper()
	ctx := t.Context()
	if _, err := e.a.Svc.Webhooks.Dispatch(ctx); err != nil {
		t.Fatal(err)
	}
	cfgs, err := e.a.DB.PushConfigsOfOwner(ctx, ownerID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs {
		ds, err := e.a.DB.ListWebhookDeliveries(ctx, webhooks.DeliveryFilter{OwnerID: ownerID, Mode: c.Mode, TargetKind: tasks.TargetA2APush,
			TargetID: c.ID, Status: webhooks.DeliveryPending, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		slices.Reverse(ds)
		for _, d := range ds {
			if err := e.a.Svc.Webhooks.Deliver(ctx, d.ID); err != nil {
				t.Fatalf("deliver %s: %v", d.ID, err)
			}
		}
	}
}

// jwks fetches the issuer's keys.
func jwks(t *testing.T, url string) *jose.JSONWebKeySet {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ks jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&ks); err != nil {
		t.Fatal(err)
	}
	return &ks
}

// TestPushNotifications: configs on a fax task over both method families
// (create, get, list, delete; secrets never shown), their refusals (SSRF,
// bounds, another owner), then a paid and delivered fax whose updates
// reach a receiver in order, each with the token and a JWT that verifies
// against the issuer's JWKS and binds the body; the last is the completed
// task with its fax artifact.
func TestPushNotifications(t *testing.T) {
	e := newStreamEnv(t, nil)
	w := e.owner("push@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 1)
	res, err := c.SendMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": tok}))
	task := asTask(t, res, err)
	r := newPushReceiver(t)
	url := r.URL + "/a2a/push"

	// 1.0 create: the secrets come back redacted.
	cfg, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task.ID, ID: "main", URL: url, Token: "tok-123"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ID != "main" || cfg.URL != url || cfg.Token != "********" || cfg.TaskID != task.ID {
		t.Fatalf("created %+v", cfg)
	}
	// A second config, with credentials, then get, list, delete.
	if _, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task.ID, ID: "two", URL: url,
		Auth: &a2a.PushAuthInfo{Scheme: "bearer", Credentials: "s3cret"}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetTaskPushConfig(t.Context(), &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "two"})
	if err != nil || got.Auth == nil || got.Auth.Scheme != "Bearer" || got.Auth.Credentials != "********" || got.Token != "" {
		t.Fatalf("get: %+v %v", got, err)
	}
	list, err := c.ListTaskPushConfigs(t.Context(), &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil || len(list) != 2 || list[0].ID != "main" || list[1].ID != "two" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := c.DeleteTaskPushConfig(t.Context(), &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "two"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetTaskPushConfig(t.Context(), &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "two"})
	a2aErr(t, "a deleted config", err, a2a.ErrInvalidParams, tasks.CodePushConfigNotFound)

	// 0.3: tasks/pushNotificationConfig/{set,get,list,delete}, raw.
	auth := "Bearer " + w.Token(t, allScopes, e.base+"/a2a")
	rpc03 := func(method, params string) map[string]any {
		_, _, body := e.rpc(auth, http.Header{"A2A-Version": {"0.3"}}, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
		return body
	}
	set := rpc03("tasks/pushNotificationConfig/set", `{"taskId":"`+string(task.ID)+`","pushNotificationConfig":{"id":"old","url":"`+url+`","token":"t03"}}`)
	if res, _ := set["result"].(map[string]any); res == nil || res["pushNotificationConfig"].(map[string]any)["token"] != "********" {
		t.Fatalf("0.3 set: %v", set)
	}
	lst := rpc03("tasks/pushNotificationConfig/list", `{"id":"`+string(task.ID)+`"}`)
	if res, _ := lst["result"].([]any); len(res) != 2 {
		t.Fatalf("0.3 list: %v", lst)
	}
	if g := rpc03("tasks/pushNotificationConfig/get", `{"id":"`+string(task.ID)+`","pushNotificationConfigId":"old"}`); g["result"] == nil {
		t.Fatalf("0.3 get: %v", g)
	}
	if d := rpc03("tasks/pushNotificationConfig/delete", `{"id":"`+string(task.ID)+`","pushNotificationConfigId":"old"}`); d["error"] != nil {
		t.Fatalf("0.3 delete: %v", d)
	}

	// Refusals: where faxhub does not deliver, bad secrets, another
	// owner's task, too many.
	for _, bad := range []struct {
		name string
		cfg  a2a.PushConfig
		want string
	}{
		{"cloud metadata", a2a.PushConfig{URL: "http://169.254.169.254/latest"}, "url"},
		{"a private address", a2a.PushConfig{URL: "https://10.0.0.1/push"}, "url"},
		{"http to a public host", a2a.PushConfig{URL: "http://push.example/x"}, "https"},
		{"a token with a newline", a2a.PushConfig{URL: url, Token: "a\r\nX-Evil: 1"}, "token"},
		{"an unknown scheme", a2a.PushConfig{URL: url, Auth: &a2a.PushAuthInfo{Scheme: "Digest", Credentials: "x"}}, "Bearer or Basic"},
	} {
		bad.cfg.TaskID = task.ID
		_, err := c.CreateTaskPushConfig(t.Context(), &bad.cfg)
		a2aErr(t, bad.name, err, a2a.ErrInvalidParams, bad.want)
	}
	other := e.client(e.owner("other-push@example.com").Token(t, allScopes, e.base+"/a2a"))
	_, err = other.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task.ID, URL: url})
	a2aErr(t, "another owner's task", err, a2a.ErrTaskNotFound, "")
	_, err = other.GetTaskPushConfig(t.Context(), &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "main"})
	a2aErr(t, "another owner's config", err, a2a.ErrTaskNotFound, "")
	err = other.DeleteTaskPushConfig(t.Context(), &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "main"})
	a2aErr(t, "deleting another owner's config", err, a2a.ErrTaskNotFound, "")
	for i := 1; i < tasks.MaxPushConfigsPerTask; i++ {
		if _, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task.ID, ID: "x" + string(rune('0'+i)), URL: url + "/unused"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task.ID, ID: "one-too-many", URL: url})
	a2aErr(t, "one config too many", err, a2a.ErrInvalidParams, tasks.CodeTooManyPushConfigs)
	for i := 1; i < tasks.MaxPushConfigsPerTask; i++ {
		if err := c.DeleteTaskPushConfig(t.Context(), &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "x" + string(rune('0'+i))}); err != nil {
			t.Fatal(err)
		}
	}

	// The owner pays, the simulator fails the first attempt and delivers
	// the retry.
	pay(t, w, artifactData(task, "fax-draft")["checkoutUrl"].(string))
	ownerID := w.Account.ID
	pump(t, e, ownerID)
	faxID := faxIDOf(t, c, task.ID)
	for range 2 {
		if err := e.a.Svc.Faxes.Deliver(t.Context(), faxID); err != nil {
			t.Fatal(err)
		}
		pump(t, e, ownerID)
	}

	calls := r.calls()
	if len(calls) < 2 {
		t.Fatalf("%d notifications", len(calls))
	}
	keys := jwks(t, e.api+"/api/auth/jwks")
	order := map[a2a.TaskState]int{a2a.TaskStateWorking: 1, a2a.TaskStateCompleted: 2}
	last := 0
	for i, call := range calls {
		if call.header.Get("A2A-Notification-Token") != "tok-123" {
			t.Errorf("notification %d: token %q", i, call.header.Get("A2A-Notification-Token"))
		}
		raw := strings.TrimPrefix(call.header.Get("Authorization"), "Bearer ")
		parsed, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.EdDSA})
		if err != nil {
			t.Fatalf("notification %d: JWT %v", i, err)
		}
		var claims jwt.Claims
		var bound struct {
			BodySHA256 string `json:"request_body_sha256"`
			TaskID     string `json:"task_id"`
		}
		if err := parsed.Claims(keys, &claims, &bound); err != nil {
			t.Fatalf("notification %d: the JWT does not verify against the JWKS: %v", i, err)
		}
		if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: e.api + "/api/auth", AnyAudience: jwt.Audience{url}, Time: time.Now()}, 0); err != nil {
			t.Errorf("notification %d: claims %+v: %v", i, claims, err)
		}
		sum := sha256.Sum256(call.body)
		if bound.BodySHA256 != hex.EncodeToString(sum[:]) || bound.TaskID != string(task.ID) || claims.ID == "" {
			t.Errorf("notification %d: body hash %q, task %q, jti %q", i, bound.BodySHA256, bound.TaskID, claims.ID)
		}
		var sr a2a.StreamResponse
		if err := json.Unmarshal(call.body, &sr); err != nil {
			t.Fatalf("notification %d: %v %s", i, err, call.body)
		}
		var state a2a.TaskState
		switch ev := sr.Event.(type) {
		case *a2a.TaskStatusUpdateEvent:
			state = ev.Status.State
		case *a2a.Task:
			state = ev.Status.State
			// Each event of the fax is a notification of the task as it
			// stands when sent: once final, every later one is the task.
			if artifactData(ev, "fax")["status"] != "delivered" {
				t.Errorf("notification %d: the final task %+v", i, ev)
			}
		}
		if order[state] < last {
			t.Errorf("notification %d: %s after a later state", i, state)
		}
		last = order[state]
	}
	var final a2a.StreamResponse
	_ = json.Unmarshal(calls[len(calls)-1].body, &final)
	if _, isTask := final.Event.(*a2a.Task); last != 2 || !isTask {
		t.Fatalf("the last notification is not completed: %s", calls[len(calls)-1].body)
	}
}

// payAndDeliver pays a fax task's draft as its owner, lets the simulator
// fail the first attempt and deliver the retry, and makes every push
// notification on the way.
func payAndDeliver(t *testing.T, e *env, w *consoletest.Owner, c *a2aclient.Client, task *a2a.Task) {
	t.Helper()
	pay(t, w, artifactData(task, "fax-draft")["checkoutUrl"].(string))
	pump(t, e, w.Account.ID)
	faxID := faxIDOf(t, c, task.ID)
	for range 2 {
		if err := e.a.Svc.Faxes.Deliver(t.Context(), faxID); err != nil {
			t.Fatal(err)
		}
		pump(t, e, w.Account.ID)
	}
}

// pushDeliveries lists a config's deliveries with their attempts, oldest
// first.
func pushDeliveries(t *testing.T, e *env, ownerID string, cfg *tasks.PushConfig) []webhooks.Delivery {
	t.Helper()
	ds, err := e.a.DB.ListWebhookDeliveries(t.Context(), webhooks.DeliveryFilter{OwnerID: ownerID, Mode: cfg.Mode, TargetKind: tasks.TargetA2APush,
		TargetID: cfg.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(ds)
	for i := range ds {
		if ds[i].AttemptLog, err = e.a.DB.ListWebhookAttempts(t.Context(), []string{ds[i].ID}); err != nil {
			t.Fatal(err)
		}
	}
	return ds
}

// onlyPushConfig reads the owner's one push config as stored.
func onlyPushConfig(t *testing.T, e *env, ownerID string) *tasks.PushConfig {
	t.Helper()
	cfgs, err := e.a.DB.PushConfigsOfOwner(t.Context(), ownerID)
	if err != nil || len(cfgs) != 1 {
		t.Fatalf("push configs: %+v %v", cfgs, err)
	}
	return &cfgs[0]
}

// TestPushNotRepeated: a notification whose body its receiver already
// acknowledged is not sent again (events that change nothing the task
// shows, and every event after the task is final): its delivery and its
// attempt are logged skipped, and the receiver gets each body once, the
// completed task last.
func TestPushNotRepeated(t *testing.T) {
	e := newStreamEnv(t, nil)
	w := e.owner("push-once@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 1)
	res, err := c.SendMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": tok}))
	task := asTask(t, res, err)
	r := newPushReceiver(t)
	if _, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task.ID, URL: r.URL + "/push"}); err != nil {
		t.Fatal(err)
	}
	payAndDeliver(t, e, w, c, task)
	// One more event of the fax once the task is final: it would push the
	// same completed task.
	faxID := faxIDOf(t, c, task.ID)
	if err := e.a.DB.InTx(t.Context(), func(tx core.Tx) error {
		return coreevents.Append(t.Context(), tx.(coreevents.Queries), w.Account.ID, core.ModeTest, coreevents.FaxDelivered, faxID, map[string]any{"id": faxID}, time.Now())
	}); err != nil {
		t.Fatal(err)
	}
	pump(t, e, w.Account.ID)

	calls := r.calls()
	finals := 0
	for i, call := range calls {
		if i > 0 && string(call.body) == string(calls[i-1].body) {
			t.Errorf("notification %d repeats the one before: %s", i, call.body)
		}
		if strings.HasPrefix(string(call.body), `{"task":`) {
			finals++
		}
	}
	if finals != 1 {
		t.Errorf("%d notifications of the final task, want 1: %d notifications", finals, len(calls))
	}
	cfg := onlyPushConfig(t, e, w.Account.ID)
	ds := pushDeliveries(t, e, w.Account.ID, cfg)
	sent, skipped := 0, 0
	for _, d := range ds {
		switch d.Status {
		case webhooks.DeliveryDelivered:
			sent++
		case webhooks.DeliverySkipped:
			skipped++
			if len(d.AttemptLog) != 1 || d.AttemptLog[0].Status != webhooks.AttemptSkipped || !strings.Contains(d.AttemptLog[0].Error, "not sent") ||
				d.AttemptLog[0].StatusCode != 0 || d.CompletedAt == nil {
				t.Errorf("skipped delivery %s (%s): %+v", d.ID, d.EventType, d.AttemptLog)
			}
		default:
			t.Errorf("delivery %s (%s) is %s", d.ID, d.EventType, d.Status)
		}
	}
	if last := ds[len(ds)-1]; last.EventType != coreevents.FaxDelivered || last.Status != webhooks.DeliverySkipped {
		t.Errorf("the event after the final one: %s %s", last.EventType, last.Status)
	}
	if sent != len(calls) || skipped == 0 {
		t.Errorf("%d deliveries sent, %d skipped; the receiver got %d", sent, skipped, len(calls))
	}
	sum := sha256.Sum256(calls[len(calls)-1].body)
	if cfg.LastPushed != hex.EncodeToString(sum[:]) {
		t.Errorf("last pushed %q, want the digest of the last body", cfg.LastPushed)
	}

	// A config set again (a new URL: maybe another receiver) forgets what
	// was pushed: the next event sends the task.
	if _, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task.ID, URL: r.URL + "/moved"}); err != nil {
		t.Fatal(err)
	}
	if err := e.a.DB.InTx(t.Context(), func(tx core.Tx) error {
		return coreevents.Append(t.Context(), tx.(coreevents.Queries), w.Account.ID, core.ModeTest, coreevents.FaxDelivered, faxID, map[string]any{"id": faxID}, time.Now())
	}); err != nil {
		t.Fatal(err)
	}
	pump(t, e, w.Account.ID)
	if got := r.calls(); len(got) != len(calls)+1 || string(got[len(got)-1].body) != string(calls[len(calls)-1].body) {
		t.Errorf("after the config was set again: %d notifications (had %d)", len(got), len(calls))
	}
}

// TestPushGone: a receiver that answers 410 Gone has its config deleted
// at once: the attempt is not retried, later changes of the task make no
// delivery, and the config is gone for the agent too.
func TestPushGone(t *testing.T) {
	e := newStreamEnv(t, nil)
	w := e.owner("push-gone@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 1)
	res, err := c.SendMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": tok}))
	task := asTask(t, res, err)
	r := newPushReceiver(t)
	r.status = http.StatusGone
	if _, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: task.ID, ID: "gone", URL: r.URL + "/push"}); err != nil {
		t.Fatal(err)
	}
	cfg := onlyPushConfig(t, e, w.Account.ID)
	payAndDeliver(t, e, w, c, task)

	if n := len(r.calls()); n != 1 {
		t.Errorf("the receiver got %d notifications after answering 410, want 1", n)
	}
	_, err = c.GetTaskPushConfig(t.Context(), &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "gone"})
	a2aErr(t, "a config whose receiver answered 410", err, a2a.ErrInvalidParams, tasks.CodePushConfigNotFound)
	ds := pushDeliveries(t, e, w.Account.ID, cfg)
	if len(ds) != 1 || ds[0].Status != webhooks.DeliveryFailed || ds[0].Attempts != 1 || ds[0].LastStatusCode != http.StatusGone {
		t.Fatalf("deliveries of the gone config: %+v", ds)
	}
}

// TestPushConfigOnSendMessage: a config given with the message that starts
// a task (configuration.taskPushNotificationConfig, on SendMessage and on
// SendStreamingMessage) is stored on the new task, named by it, and gets
// its updates to the completed task; a bad one is refused before any task
// starts.
func TestPushConfigOnSendMessage(t *testing.T) {
	e := newStreamEnv(t, nil)
	for _, tc := range []struct {
		name   string
		stream bool
	}{{"SendMessage", false}, {"SendStreamingMessage", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.owner("push-send-" + strings.ToLower(tc.name) + "@example.com")
			c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
			r := newPushReceiver(t)
			url := r.URL + "/" + tc.name
			send := func(cfg *a2a.PushConfig) (*a2a.Task, error) {
				req := skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": upload(t, c, 1)})
				req.Config = &a2a.SendMessageConfig{PushConfig: cfg}
				if !tc.stream {
					res, err := c.SendMessage(t.Context(), req)
					if err != nil {
						return nil, err
					}
					return asTask(t, res, nil), nil
				}
				for ev, err := range c.SendStreamingMessage(t.Context(), req) {
					if err != nil {
						return nil, err
					}
					if task, ok := ev.(*a2a.Task); ok {
						return task, nil
					}
					t.Fatalf("the stream's first event %T", ev)
				}
				return nil, errors.New("the stream ended without a task")
			}

			_, err := send(&a2a.PushConfig{URL: "http://169.254.169.254/latest"})
			a2aErr(t, "a config to cloud metadata", err, a2a.ErrInvalidParams, "url")
			if cfgs, err := e.a.DB.PushConfigsOfOwner(t.Context(), w.Account.ID); err != nil || len(cfgs) != 0 {
				t.Fatalf("a refused config is stored: %+v %v", cfgs, err)
			}

			task, err := send(&a2a.PushConfig{URL: url, Token: "tok-" + tc.name})
			if err != nil {
				t.Fatal(err)
			}
			list, err := c.ListTaskPushConfigs(t.Context(), &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
			if err != nil || len(list) != 1 || list[0].ID != string(task.ID) || list[0].URL != url || list[0].Token != "********" {
				t.Fatalf("the task's configs: %+v %v", list, err)
			}
			payAndDeliver(t, e, w, c, task)
			calls := r.calls()
			if len(calls) == 0 {
				t.Fatal("no notification")
			}
			for i, call := range calls {
				if call.header.Get(tasks.HeaderNotificationToken) != "tok-"+tc.name {
					t.Errorf("notification %d: token %q", i, call.header.Get(tasks.HeaderNotificationToken))
				}
			}
			var final a2a.StreamResponse
			if err := json.Unmarshal(calls[len(calls)-1].body, &final); err != nil {
				t.Fatal(err)
			}
			if ft, ok := final.Event.(*a2a.Task); !ok || ft.ID != task.ID || ft.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("the last notification: %s", calls[len(calls)-1].body)
			}
		})
	}
}
