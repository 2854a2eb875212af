package convert

import (
	"compress/zlib"
	"fmt"
	"image"
	"image/color"
	"io"
	"strings"
)

// flateImage turns a decoded image into a Flate-compressed image XObject,
// streaming it row by row: the only copy of the pixels is the decoded image
// itself. Transparency is flattened onto white paper, which is what a fax
// prints.
func flateImage(img image.Image) pageImage {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	colorSpace, channels := "/DeviceRGB", 3
	var row func(y int, out []byte) []byte
	switch m := img.(type) {
	case *image.Gray:
		colorSpace, channels = "/DeviceGray", 1
		row = func(y int, _ []byte) []byte { return m.Pix[m.PixOffset(b.Min.X, y):][:w] }
	case *image.Paletted:
		colorSpace, channels = indexedColorSpace(m.Palette), 1
		row = func(y int, _ []byte) []byte { return m.Pix[m.PixOffset(b.Min.X, y):][:w] }
	case *image.CMYK:
		colorSpace, channels = "/DeviceCMYK", 4
		row = func(y int, _ []byte) []byte { return m.Pix[m.PixOffset(b.Min.X, y):][:4*w] }
	case *image.Gray16:
		colorSpace, channels = "/DeviceGray", 1
		row = func(y int, out []byte) []byte {
			px := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := range w {
				out[x] = px[2*x] // the high byte
			}
			return out
		}
	case *image.RGBA:
		row = func(y int, out []byte) []byte {
			px := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := range w {
				// Premultiplied: over white, a channel is c + (255 - a).
				a := 255 - px[4*x+3]
				out[3*x], out[3*x+1], out[3*x+2] = px[4*x]+a, px[4*x+1]+a, px[4*x+2]+a
			}
			return out
		}
	case *image.NRGBA:
		row = func(y int, out []byte) []byte {
			px := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := range w {
				a := uint32(px[4*x+3])
				for c := range 3 {
					out[3*x+c] = byte((uint32(px[4*x+c])*a + 255*(255-a)) / 255)
				}
			}
			return out
		}
	default:
		row = func(y int, out []byte) []byte {
			for x := range w {
				r, g, bl, a := img.At(b.Min.X+x, y).RGBA()
				out[3*x], out[3*x+1], out[3*x+2] = byte((r+0xffff-a)>>8), byte((g+0xffff-a)>>8), byte((bl+0xffff-a)>>8)
			}
			return out
		}
	}
	return pageImage{
		width: w, height: h,
		dict: fmt.Sprintf("/ColorSpace %s /BitsPerComponent 8 /Filter /FlateDecode", colorSpace),
		body: func(dst io.Writer) error {
			// Fast compression: the fax back end rasterises the page again,
			// and the upload is stored once.
			zw, err := zlib.NewWriterLevel(dst, zlib.BestSpeed)
			if err != nil {
				return err
			}
			buf := make([]byte, channels*w)
			for y := b.Min.Y; y < b.Max.Y; y++ {
				if _, err := zw.Write(row(y, buf)); err != nil {
					return err
				}
			}
			return zw.Close()
		},
	}
}

// indexedColorSpace is an /Indexed colour space for a palette, its entries
// flattened onto white.
func indexedColorSpace(p color.Palette) string {
	var s strings.Builder
	fmt.Fprintf(&s, "[/Indexed /DeviceRGB %d <", max(len(p), 1)-1)
	for _, c := range p {
		r, g, b, a := c.RGBA()
		fmt.Fprintf(&s, "%02x%02x%02x", (r+0xffff-a)>>8, (g+0xffff-a)>>8, (b+0xffff-a)>>8)
	}
	if len(p) == 0 {
		s.WriteString("ffffff")
	}
	s.WriteString(">]")
	return s.String()
}
