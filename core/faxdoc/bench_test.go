package faxdoc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/faxes"
)

func BenchmarkCompose(b *testing.B) {
	cover := &faxes.CoverPage{RecipientName: "Dana", SenderName: "Ivan", Subject: "Lease", Message: "Please find the lease attached."}
	for _, pages := range []int{1, 20} {
		src := make([]srcPage, pages)
		for i := range src {
			src[i] = letter
		}
		pdf := fixturePDF(src...)
		for _, withCover := range []bool{false, true} {
			comp := faxes.Composition{Header: "ACME Legal", From: "+12125550100", At: time.Date(2026, 11, 29, 10, 4, 0, 0, time.UTC)}
			if withCover {
				comp.Cover = cover
			}
			b.Run(fmt.Sprintf("pages=%d/cover=%v", pages, withCover), func(b *testing.B) {
				b.ReportAllocs()
				var size int
				for b.Loop() {
					var out countWriter
					if _, err := testComposer.Compose(context.Background(), &out, bytes.NewReader(pdf), comp); err != nil {
						b.Fatal(err)
					}
					size = int(out)
				}
				b.ReportMetric(float64(size), "bytes/doc")
			})
		}
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
