//go:build bench

package bench

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/faxhub/faxhub/internal/testenv"
)

const (
	a2aClients  = 16
	a2aDuration = 5 * time.Second
	a2aCalls    = 10_000
)

// benchA2A measures GetTask per second on one stored task through faxhub's
// A2A endpoint with a real OAuth token (verification, scope check, the
// task read and its state derived from the draft) against a bare a2a-go
// server (a2asrv.NewHandler, a trivial executor, the in-memory task store
// holding one task, no auth), both JSON-RPC over loopback HTTP with the
// same a2a-go client; and the faxhub process's heap after 10,000+ calls.
func benchA2A(t *testing.T, rep *report) {
	ctx := t.Context()
	site := serveApp(t, true)
	base := site.Base

	tok := oauthToken(t, site, base+"/a2a", "fax:draft", "fax:read")
	taskID := a2aFaxTask(t, base+"/a2a", tok)
	fx := loadA2A(t, base+"/a2a", tok, taskID)
	runtime.GC()
	after := heapMB()

	store := taskstore.NewInMemory(nil)
	const plainTask = "task-1"
	if _, err := store.Create(ctx, &a2a.Task{ID: plainTask, ContextID: "ctx-1",
		Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("pay at the checkout"))}}); err != nil {
		t.Fatal(err)
	}
	plain := httptest.NewServer(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(trivialExecutor{}, a2asrv.WithTaskStore(store))))
	defer plain.Close()
	bl := loadA2A(t, plain.URL, "", plainTask)

	rep.add(fmt.Sprintf("a2a      GetTask on a stored task, %d clients, %s", a2aClients, a2aDuration), "calls/s", fx, bl, ratioAtLeast(0.5), 0,
		"a2a: JSON-RPC GetTask with a real OAuth access token (hash lookup, audience and scope checks), the task row and its state derived "+
			"from the draft on every read; baseline: a2asrv.NewHandler with a trivial executor and the in-memory task store, no auth, "+
			"same a2a-go client and transport.")
	rep.add(fmt.Sprintf("a2a      server heap after %d+ calls", a2aCalls), "MB", after, nan, noTarget(), 1,
		"a2a heap: runtime HeapInuse after a GC; the process also holds the benchmark clients.")
}

// trivialExecutor answers every message with one text message.
type trivialExecutor struct{}

func (trivialExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("ok")), nil)
	}
}

func (trivialExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// a2aClient is an a2a-go JSON-RPC client of endpoint whose HTTP client
// sends tok as a bearer token (none when empty).
func a2aClient(t *testing.T, endpoint, tok string, hc *http.Client) *a2aclient.Client {
	c := &http.Client{Transport: authRT{tok: tok, base: hc.Transport}, Timeout: hc.Timeout}
	cl, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(endpoint, a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(c))
	if err != nil {
		t.Fatalf("a2a client for %s: %v", endpoint, err)
	}
	return cl
}

// a2aFaxTask makes the stored task: create_upload, PUT a PDF, create_fax
// (input_required until the owner pays, which the benchmark never does).
func a2aFaxTask(t *testing.T, endpoint, tok string) string {
	ctx := t.Context()
	cl := a2aClient(t, endpoint, tok, newClient(1))
	send := func(skill string, args map[string]any) a2a.SendMessageResult {
		res, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser,
			a2a.NewDataPart(map[string]any{"skill": skill, "arguments": args}))})
		if err != nil {
			t.Fatalf("%s: %v", skill, err)
		}
		return res
	}
	msg, ok := send("create_upload", map[string]any{"contentType": "application/pdf"}).(*a2a.Message)
	if !ok || len(msg.Parts) == 0 {
		t.Fatalf("create_upload answered %#v", msg)
	}
	var up map[string]any
	for _, p := range msg.Parts {
		if d, ok := p.Data().(map[string]any); ok {
			up = d
		}
	}
	uploadURL, _ := up["uploadUrl"].(string)
	uploadToken, _ := up["uploadToken"].(string)
	if uploadURL == "" || uploadToken == "" {
		t.Fatalf("create_upload data: %v", up)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, uploadURL, bytes.NewReader(testenv.MinimalPDF(1)))
	req.Header.Set("Content-Type", "application/pdf")
	if err := call(newClient(1), req, nil); err != nil {
		t.Fatalf("PUT %s: %v", uploadURL, err)
	}
	task, ok := send("create_fax", map[string]any{"to": "+12125550100", "uploadToken": uploadToken}).(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("create_fax answered %#v", task)
	}
	return string(task.ID)
}

// loadA2A runs a2aClients clients calling GetTask on taskID for
// a2aDuration (and at least a2aCalls calls in all) and returns calls per
// second.
func loadA2A(t *testing.T, endpoint, tok, taskID string) float64 {
	ctx := t.Context()
	hc := newClient(a2aClients)
	var clients []*a2aclient.Client
	for range a2aClients {
		clients = append(clients, a2aClient(t, endpoint, tok, hc))
	}
	var calls atomic.Int64
	var failed atomic.Value
	deadline := time.Now().Add(a2aDuration)
	start := time.Now()
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) || calls.Load() < a2aCalls {
				task, err := cl.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID)})
				if err != nil || string(task.ID) != taskID {
					failed.Store(fmt.Sprint(err, task))
					return
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		t.Fatalf("GetTask %s on %s failed: %v", taskID, endpoint, f)
	}
	return float64(calls.Load()) / time.Since(start).Seconds()
}

// authRT adds a bearer token to every request over base.
type authRT struct {
	tok  string
	base http.RoundTripper
}

func (b authRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.tok != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.tok)
	}
	return b.base.RoundTrip(r)
}
