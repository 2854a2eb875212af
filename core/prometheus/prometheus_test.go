package prometheus

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/webhooks"
)

// TestEventsDoNotAllocate: once a label set has been seen, recording an
// event allocates nothing (they run on the delivery and upload paths).
func TestEventsDoNotAllocate(t *testing.T) {
	m := New(Options{})
	m.AttemptEnded("simulated", faxes.AttemptDelivered, time.Second)
	m.FaxEnded(faxes.Delivered, time.Minute)
	m.Converted(documents.FilePDF, true, time.Millisecond)
	m.WebhookAttemptEnded(webhooks.TargetWebhook, webhooks.OutcomeDelivered, time.Millisecond)
	if n := testing.AllocsPerRun(100, func() {
		m.AttemptEnded("simulated", faxes.AttemptDelivered, time.Second)
		m.FaxEnded(faxes.Delivered, time.Minute)
		m.Converted(documents.FilePDF, true, time.Millisecond)
		m.WebhookAttemptEnded(webhooks.TargetWebhook, webhooks.OutcomeDelivered, time.Millisecond)
	}); n != 0 {
		t.Errorf("%v allocations per event, want 0", n)
	}
	if got := counterValue(t, m.attempts.WithLabelValues("simulated", "delivered")); got != 102 {
		t.Errorf("attempts = %v, want 102 (1 + AllocsPerRun's warm-up and 100 runs)", got)
	}
	if got := counterValue(t, m.conversions.WithLabelValues("pdf", "ok")); got != 102 {
		t.Errorf("conversions = %v, want 102 (1 + AllocsPerRun's warm-up and 100 runs)", got)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

func BenchmarkAttemptEnded(b *testing.B) {
	m := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		m.AttemptEnded("simulated", faxes.AttemptDelivered, time.Second)
	}
}
