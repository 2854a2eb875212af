package webhooks

import "time"

// Metrics counts attempts that ended (core/prometheus implements it; nil
// counts nothing). outcome is one of the Outcome* values.
type Metrics interface {
	WebhookAttemptEnded(kind TargetKind, outcome string, took time.Duration)
}

// Outcomes of an attempt, as Metrics counts them.
const (
	OutcomeDelivered = "delivered" // 2xx
	OutcomeFailed    = "failed"    // no answer, a timeout, a redirect, another status: retried while the schedule lasts
	OutcomeGone      = "gone"      // 410: the target is disabled or removed
	OutcomeSkipped   = "skipped"   // not sent: its destination said it would repeat what the receiver has
)

// metricOutcome is o's outcome label.
func metricOutcome(o *Outcome) string {
	switch {
	case o.Skipped:
		return OutcomeSkipped
	case o.Delivered:
		return OutcomeDelivered
	case o.Gone:
		return OutcomeGone
	}
	return OutcomeFailed
}
