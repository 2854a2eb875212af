package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/webhooks"
)

// Webhook job kinds and their River queue. Stored in job rows: never
// change them.
const (
	// KindDeliverWebhook makes a webhook delivery's attempts
	// (webhooks.Service.Deliver): one job per delivery, snoozed between
	// attempts.
	KindDeliverWebhook = "deliver_webhook"
	// KindWebhookNotice mails an owner that an endpoint was disabled.
	KindWebhookNotice = "webhook_notice"
	// QueueWebhooks is the River queue of both, with workers of its own,
	// so a backlog of webhooks never holds up a fax's delivery.
	QueueWebhooks = "webhooks"
)

// Webhook workers per process: an attempt mostly waits on the network (at
// most webhooks.Config.AttemptTimeout), so there are more of them than
// CPUs; the in-flight caps keep one owner from taking them all.
const defaultWebhookWorkers = 64

var _ webhooks.Queue = (*Queue)(nil)

type deliverWebhookArgs struct {
	DeliveryID string `json:"delivery_id"`
}

func (deliverWebhookArgs) Kind() string { return KindDeliverWebhook }

func (deliverWebhookArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueWebhooks}
}

type webhookNoticeArgs struct {
	EndpointID string `json:"endpoint_id"`
}

func (webhookNoticeArgs) Kind() string { return KindWebhookNotice }

func (webhookNoticeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueWebhooks, MaxAttempts: 10}
}

// deliverWebhookWorker runs deliveries. A *webhooks.WaitError (the next
// attempt's time, a busy target) is a snooze, which uses up none of the
// job's attempts; an error is infrastructure trouble, retried by River.
type deliverWebhookWorker struct {
	river.WorkerDefaults[deliverWebhookArgs]
	deliver func(ctx context.Context, deliveryID string) error
}

func (w *deliverWebhookWorker) Work(ctx context.Context, job *river.Job[deliverWebhookArgs]) error {
	if w.deliver == nil {
		return fmt.Errorf("%s: this process has no handler", job.Kind)
	}
	if job.Args.DeliveryID == "" {
		return river.JobCancel(errors.New("deliver_webhook job without a delivery_id"))
	}
	err := w.deliver(ctx, job.Args.DeliveryID)
	var wait *webhooks.WaitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &wait):
		// A millisecond more: the job must not come due a moment before
		// the delivery's own time, which would only snooze again.
		return river.JobSnooze(wait.After + time.Millisecond)
	case errors.Is(err, context.Canceled) && ctx.Err() != nil && !errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely):
		return river.JobSnooze(time.Second)
	}
	return err
}

func addWebhookWorkers(workers *river.Workers, h Handlers) error {
	notice := &funcWorker[webhookNoticeArgs]{}
	if h.WebhookNotice != nil {
		notice.run = func(ctx context.Context, job *river.Job[webhookNoticeArgs]) error {
			return h.WebhookNotice(ctx, job.Args.EndpointID)
		}
	}
	if err := river.AddWorkerSafely(workers, &deliverWebhookWorker{deliver: h.DeliverWebhook}); err != nil {
		return fmt.Errorf("register worker: %w", err)
	}
	if err := river.AddWorkerSafely(workers, notice); err != nil {
		return fmt.Errorf("register worker: %w", err)
	}
	return nil
}

// EnqueueWebhookDeliveries inserts a deliver_webhook job per delivery in
// tx (the dispatcher's transaction, or a redelivery's).
func (q *Queue) EnqueueWebhookDeliveries(ctx context.Context, tx core.Tx, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	txer, ok := tx.(SQLTxer)
	if !ok || txer.SQLTx() == nil {
		return fmt.Errorf("enqueue webhook deliveries: transaction %T does not expose its *sql.Tx", tx)
	}
	if q.dialect == DialectSQLite {
		return q.insertWebhooksSQLite(ctx, txer, ids)
	}
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: deliverWebhookArgs{DeliveryID: id}}
	}
	if _, err := q.client.InsertManyFastTx(ctx, txer.SQLTx(), params); err != nil {
		return fmt.Errorf("enqueue webhook deliveries: %w", err)
	}
	return nil
}

// webhookInsertBatch bounds the rows of one direct insert (SQLite allows
// 32,766 parameters; a row takes three).
const webhookInsertBatch = 500

// insertWebhooksSQLite inserts the jobs as River's SQLite driver would
// (insert.go explains why, and TestDirectInsertMatchesRiver checks the
// rows are River's), many rows a statement: a dispatcher's batch of
// hundreds costs one statement instead of a savepoint each.
func (q *Queue) insertWebhooksSQLite(ctx context.Context, txer SQLTxer, ids []string) error {
	const row = "(?, datetime('now', 'subsec'), ?, ?, '{}', 1, '" + QueueWebhooks + "', datetime('now', 'subsec'), 'available', '[]')"
	for len(ids) > 0 {
		n := min(len(ids), webhookInsertBatch)
		args := make([]any, 0, 3*n)
		for _, id := range ids[:n] {
			b, err := json.Marshal(deliverWebhookArgs{DeliveryID: id})
			if err != nil {
				return fmt.Errorf("encode job args: %w", err)
			}
			args = append(args, b, KindDeliverWebhook, q.maxAttempts)
		}
		query := "INSERT INTO river_job (args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags) VALUES " +
			strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
		if _, err := txer.SQLTx().ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("enqueue webhook deliveries: %w", err)
		}
		ids = ids[n:]
	}
	return nil
}

// EnqueueWebhookNotice inserts a webhook_notice job in tx.
func (q *Queue) EnqueueWebhookNotice(ctx context.Context, tx core.Tx, endpointID string) error {
	if endpointID == "" {
		return errors.New("enqueue webhook notice: empty endpoint id")
	}
	return q.insertTx(ctx, tx, webhookNoticeArgs{EndpointID: endpointID})
}
