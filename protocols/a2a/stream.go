package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/faxhub/faxhub/core/tasks"
)

// Streams: SendStreamingMessage (0.3 message/stream) and SubscribeToTask
// (0.3 tasks/resubscribe), served as server-sent events by a2a-go's
// JSON-RPC handlers from the iterators below. Core follows the task
// (tasks.Stream: the owner's event log in the shared database, so any
// replica serves any stream); this file renders what it yields.

// DefaultKeepAlive is how often an idle stream sends an SSE comment, so
// that proxies and load balancers that cut a silent connection (often
// after 60 s) leave it open.
const DefaultKeepAlive = 15 * time.Second

// SendStreamingMessage answers a message as SendMessage does. A message
// that starts or continues a task (create_fax, buy_number, buy_credits,
// the AP2 mandates) then follows that task: the stream is opened before
// the task is created, so nothing that happens to it in between is lost.
// Any other message is answered with one Message and the stream ends.
func (rh *requestHandler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if !rh.startsTask(req) {
			res, err := rh.SendMessage(ctx, req)
			if err != nil {
				yield(nil, err)
				return
			}
			yield(res, nil)
			return
		}
		p, err := principal(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		st, err := rh.h.svc.Tasks.OpenStream(ctx, p)
		if err != nil {
			yield(nil, rh.fail(ctx, "open task stream", err, targetTask))
			return
		}
		defer st.Close()
		r, err := rh.send(ctx, req)
		switch {
		case err != nil:
			yield(nil, err)
		case r.task == nil:
			yield(r.msg, nil)
		default:
			rh.follow(ctx, st, r.task, yield)
		}
	}
}

// SubscribeToTask follows one of the caller's tasks, created with or
// without a stream: the task as it stands, then its changes. A task
// already final is answered and the stream ends; another owner's task is
// TaskNotFound, as in GetTask.
func (rh *requestHandler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		p, err := principal(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		st, tv, err := rh.h.svc.Tasks.Subscribe(ctx, p, string(req.ID))
		if err != nil {
			yield(nil, rh.fail(ctx, "subscribe to task", err, targetTask))
			return
		}
		defer st.Close()
		rh.follow(ctx, st, tv, yield)
	}
}

// startsTask reports whether a message would start or continue a task:
// a skill that answers one, or an AP2 mandate. It only looks; send checks
// the message and refuses what is wrong, streamed or not.
func (rh *requestHandler) startsTask(req *a2a.SendMessageRequest) bool {
	if req == nil || req.Message == nil || len(req.Message.Parts) != 1 || req.Message.Parts[0] == nil {
		return false
	}
	data, _ := req.Message.Parts[0].Content.(a2a.Data)
	obj, _ := data.Value.(map[string]any)
	if has(obj, keyIntentMandate) || has(obj, keyPaymentMandate) {
		return true
	}
	id, _ := obj["skill"].(string)
	s, ok := rh.h.skill(id)
	return ok && s.Task
}

// follow streams a task: the Task first, then, for each change core
// yields, the artifacts that are new or changed (TaskArtifactUpdateEvent,
// whole: lastChunk) and the new status (TaskStatusUpdateEvent). The last
// status of a finished task is its terminal one, after its final
// artifact; then the stream ends (0.3 clients read final: true on it).
func (rh *requestHandler) follow(ctx context.Context, st *tasks.Stream, first *tasks.View, yield func(a2a.Event, error) bool) {
	var prev *a2a.Task
	for v, err := range st.Follow(ctx, first) {
		if err != nil {
			yield(nil, rh.fail(ctx, "follow task", err, targetTask))
			return
		}
		t := renderTask(v)
		if prev == nil {
			if !yield(t, nil) {
				return
			}
			prev = t
			continue
		}
		for _, a := range changedArtifacts(prev.Artifacts, t.Artifacts) {
			if !yield(&a2a.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Artifact: a, LastChunk: true}, nil) {
				return
			}
		}
		if !yield(&a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}, nil) {
			return
		}
		prev = t
		// a2a-go marks a 0.3 status update final when its state is
		// input-required (the 0.3 rule: the client must answer), and a
		// 0.3 client stops reading there; so the stream ends too. Only an
		// AP2 purchase comes back to input-required (its approval), and a
		// 0.3 client resubscribes to follow it on.
		if callFrom(ctx).v03 && t.Status.State == a2a.TaskStateInputRequired {
			return
		}
	}
}

// changedArtifacts returns the artifacts of next that prev does not have
// as they are.
func changedArtifacts(prev, next []*a2a.Artifact) []*a2a.Artifact {
	had := make(map[a2a.ArtifactID][]byte, len(prev))
	for _, a := range prev {
		b, _ := json.Marshal(a)
		had[a.ID] = b
	}
	var out []*a2a.Artifact
	for _, a := range next {
		b, _ := json.Marshal(a)
		if old, ok := had[a.ID]; !ok || !bytes.Equal(old, b) {
			out = append(out, a)
		}
	}
	return out
}

// flushWriter gives a2a-go's SSE writer the http.Flusher it asks for
// whatever middleware wrapped the response: the flush goes through the
// wrappers' Unwrap to the connection.
type flushWriter struct{ http.ResponseWriter }

func (f flushWriter) Flush()                      { _ = http.NewResponseController(f.ResponseWriter).Flush() }
func (f flushWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }
