package a2a_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/faxhub/faxhub/core/tasks"
	"github.com/faxhub/faxhub/core/webhooks"
)

// pushReceiver records the notifications it gets.
type pushReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []pushCall
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
		r.mu.Unlock()
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
