package documents

import (
	"context"
	"time"
)

// ConversionMetrics observes conversions for monitoring; an adapter
// (core/prometheus) counts them. Implementations must be cheap and safe for
// concurrent use.
type ConversionMetrics interface {
	// Converted is one Converter.ToPDF or CountPDF call: the kind of file, whether it
	// succeeded, and how long it took (waiting for a slot included).
	Converted(kind FileKind, ok bool, took time.Duration)
}

// ObservedConverter times every conversion of c for m. Wrapping the port
// once (core/services) covers uploads, machine faxes and received faxes
// alike.
func ObservedConverter(c Converter, m ConversionMetrics, now func() time.Time) Converter {
	if now == nil {
		now = time.Now
	}
	return observedConverter{Converter: c, m: m, now: now}
}

type observedConverter struct {
	Converter
	m   ConversionMetrics
	now func() time.Time
}

func (c observedConverter) ToPDF(ctx context.Context, req ConvertRequest) (int, error) {
	start := c.now()
	pages, err := c.Converter.ToPDF(ctx, req)
	c.m.Converted(req.Kind, err == nil, c.now().Sub(start))
	return pages, err
}

func (c observedConverter) CountPDF(ctx context.Context, req CountRequest) (int, error) {
	start := c.now()
	pages, err := c.Converter.CountPDF(ctx, req)
	c.m.Converted(FilePDF, err == nil, c.now().Sub(start))
	return pages, err
}
