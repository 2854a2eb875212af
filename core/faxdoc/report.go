package faxdoc

import (
	"context"
	"io"

	"github.com/faxhub/faxhub/core/faxes"
)

func (c *Composer) Report(ctx context.Context, w io.Writer, r faxes.TransmissionReport) error {
	return nil
}
