package faxdoc

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// Report layout, points.
const (
	reportRowSize  = 10.0
	reportRowLead  = 15.0
	reportLabelW   = 130.0
	maxReportImage = 300.0 // the first page's image's width at most
	// maxFirstPagePixels bounds the first page image decoded: a fax page
	// at fine resolution is 1728 × ~2300.
	maxFirstPagePixels = 4 * faxWidth * maxRows
)

// Report implements faxes.Composer: a one-page US Letter PDF, like the
// confirmation page a fax machine prints.
func (c *Composer) Report(ctx context.Context, w io.Writer, r faxes.TransmissionReport) error {
	ctx, release, err := c.slot(ctx, "transmission report")
	if err != nil {
		return err
	}
	defer release()
	pctx, err := pdfcpu.CreateContextWithXRefTable(pdfConfig(model.VALIDATE), &types.Dim{Width: letterW, Height: letterH})
	if err != nil {
		return fmt.Errorf("transmission report: %w", err)
	}
	xt := pctx.XRefTable
	d := c.drawing()
	cv := &canvas{doc: d}
	reg := c.regular

	y := letterH - margin - 20
	cv.text(true, 20, margin, y, "Transmission Report")
	y -= 12
	cv.hline(margin, letterW-margin, y, 1.5)
	y -= 22
	when := r.Finished
	if when.IsZero() {
		when = r.Started
	}
	result := strings.ToUpper(strings.TrimSpace(r.Result))
	cv.text(true, 14, margin, y, "Result: "+result)
	y -= 24

	valueW := letterW - 2*margin - reportLabelW
	row := func(label, value string) {
		if strings.TrimSpace(value) == "" {
			return
		}
		cv.text(true, reportRowSize, margin, y, label)
		lines := wrap(reg, value, reportRowSize, valueW)
		if len(lines) > 6 { // a provider's reason is a sentence or two
			lines = lines[:6]
			lines[5] = fit(reg, lines[5]+" …", reportRowSize, valueW)
		}
		for _, l := range lines {
			cv.text(false, reportRowSize, margin+reportLabelW, y, l)
			y -= reportRowLead
		}
	}
	row("Date", timeText(when))
	row("Fax ID", r.FaxID)
	row("Destination", readableNumber(r.To))
	row("From", readableNumber(r.From))
	row("Remote station ID", r.RemoteStationID)
	row("Pages", fmt.Sprintf("%d sent of %d", r.PagesSent, r.Pages))
	row("Attempts", strconv.Itoa(r.Attempts))
	row("Duration", r.Duration.Round(time.Second).String())
	row("Started", timeText(r.Started))
	row("Finished", timeText(r.Finished))
	row("Resolution", resolutionText(r.Resolution))
	row("Result", result)
	row("Reason", r.Reason)
	if h := r.DocumentSHA256; len(h) > 32 {
		row("Document SHA-256", h[:32]+"\n"+h[32:])
	} else {
		row("Document SHA-256", h)
	}

	var res types.Dict
	if len(r.FirstPage) > 0 {
		y -= 10
		cv.text(true, reportRowSize, margin, y, "Page 1")
		y -= 8
		ref, iw, ih, err := imageXObject(xt, r.FirstPage)
		if err != nil {
			return fmt.Errorf("transmission report: first page image: %w", err)
		}
		// The image is shown at the fax page's proportions: its pixels
		// are square (standard's rows were doubled).
		avail := y - margin
		scale := min(maxReportImage/float64(iw), avail/float64(ih))
		dw, dh := float64(iw)*scale, float64(ih)*scale
		if dw > 1 && dh > 1 {
			cv.printf("q %s 0 0 %s %s %s cm /FaxhubP1 Do Q\n", num(dw), num(dh), num(margin), num(y-dh))
			cv.printf("0.5 w %s %s %s %s re S\n", num(margin), num(y-dh), num(dw), num(dh))
			res = types.Dict{"XObject": types.Dict{"FaxhubP1": ref}}
		}
	}
	if err := addPage(xt, d, cv.b.Bytes(), false, res); err != nil {
		return fmt.Errorf("transmission report: %w", err)
	}
	if err := d.finish(xt); err != nil {
		return fmt.Errorf("transmission report: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("transmission report: %w", err)
	}
	if err := api.WriteContext(pctx, w); err != nil {
		return fmt.Errorf("transmission report: write: %w", err)
	}
	return nil
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

func resolutionText(r faxes.Resolution) string {
	switch r {
	case faxes.ResolutionFine:
		return "fine (204 × 196 dpi)"
	case faxes.ResolutionStandard:
		return "standard (204 × 98 dpi)"
	}
	return string(r)
}

// imageXObject adds the PNG b as an 8-bit gray image XObject.
func imageXObject(xt *model.XRefTable, b []byte) (types.IndirectRef, int, int, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return types.IndirectRef{}, 0, 0, fmt.Errorf("read png: %w", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width*cfg.Height > maxFirstPagePixels {
		return types.IndirectRef{}, 0, 0, fmt.Errorf("png of %dx%d pixels refused", cfg.Width, cfg.Height)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return types.IndirectRef{}, 0, 0, fmt.Errorf("decode png: %w", err)
	}
	g, ok := img.(*image.Gray)
	if !ok || g.Stride != g.Bounds().Dx() {
		g = image.NewGray(image.Rect(0, 0, cfg.Width, cfg.Height))
		draw.Draw(g, g.Bounds(), img, img.Bounds().Min, draw.Src)
	}
	sd, err := xt.NewStreamDictForBuf(g.Pix)
	if err != nil {
		return types.IndirectRef{}, 0, 0, err
	}
	sd.Insert("Type", types.Name("XObject"))
	sd.Insert("Subtype", types.Name("Image"))
	sd.Insert("Width", types.Integer(cfg.Width))
	sd.Insert("Height", types.Integer(cfg.Height))
	sd.Insert("ColorSpace", types.Name("DeviceGray"))
	sd.Insert("BitsPerComponent", types.Integer(8))
	if err := sd.Encode(); err != nil {
		return types.IndirectRef{}, 0, 0, fmt.Errorf("encode image: %w", err)
	}
	ref, err := xt.IndRefForNewObject(*sd)
	if err != nil {
		return types.IndirectRef{}, 0, 0, fmt.Errorf("add image: %w", err)
	}
	return *ref, cfg.Width, cfg.Height, nil
}
