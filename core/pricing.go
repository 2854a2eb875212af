package core

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
)

//go:embed prices.json
var defaultPriceTable []byte

// Tariff prices faxes to a group of countries.
type Tariff struct {
	ID        string   `json:"id"`
	Countries []string `json:"countries"`
	PerPage   string   `json:"perPage"`
	Cover     string   `json:"cover"`
	Minimum   string   `json:"minimum"`
	// NumberMonthly is the monthly price of a fax number in these
	// countries; empty where faxhub rents no numbers.
	NumberMonthly string `json:"numberMonthly,omitempty"`

	perPage, cover, minimum, numberMonthly int64
}

// CreditPack is a purchasable bundle of credits.
type CreditPack struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Price  string `json:"price"`
	Credit string `json:"credit"`

	PriceMicros  int64 `json:"-"`
	CreditMicros int64 `json:"-"`
}

// PriceTable holds tariffs by country and the credit packs on sale.
type PriceTable struct {
	Currency string       `json:"currency"`
	Tariffs  []Tariff     `json:"tariffs"`
	Packs    []CreditPack `json:"packs"`

	byCountry map[string]*Tariff
}

// DefaultPriceTable returns the embedded table.
func DefaultPriceTable() *PriceTable {
	t, err := ParsePriceTable(defaultPriceTable)
	if err != nil {
		panic("core: embedded price table is invalid: " + err.Error())
	}
	return t
}

// ParsePriceTable parses and checks a price table document.
func ParsePriceTable(b []byte) (*PriceTable, error) {
	var t PriceTable
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("parse price table: %w", err)
	}
	if t.Currency != Currency {
		return nil, fmt.Errorf("price table currency must be %q", Currency)
	}
	t.byCountry = map[string]*Tariff{}
	for i := range t.Tariffs {
		tr := &t.Tariffs[i]
		var err error
		if tr.perPage, err = ParseUSD(tr.PerPage); err != nil || tr.perPage <= 0 {
			return nil, fmt.Errorf("tariff %s: perPage: invalid", tr.ID)
		}
		if tr.cover, err = ParseUSD(tr.Cover); err != nil {
			return nil, fmt.Errorf("tariff %s: cover: %w", tr.ID, err)
		}
		if tr.minimum, err = ParseUSD(tr.Minimum); err != nil {
			return nil, fmt.Errorf("tariff %s: minimum: %w", tr.ID, err)
		}
		if tr.NumberMonthly != "" {
			if tr.numberMonthly, err = ParseUSD(tr.NumberMonthly); err != nil || tr.numberMonthly <= 0 {
				return nil, fmt.Errorf("tariff %s: numberMonthly: invalid", tr.ID)
			}
		}
		for _, c := range tr.Countries {
			if _, dup := t.byCountry[c]; dup {
				return nil, fmt.Errorf("country %s is in two tariffs", c)
			}
			t.byCountry[c] = tr
		}
	}
	for i := range t.Packs {
		p := &t.Packs[i]
		var err error
		if p.PriceMicros, err = ParseUSD(p.Price); err != nil || p.PriceMicros <= 0 {
			return nil, fmt.Errorf("pack %s: price: invalid", p.ID)
		}
		if p.CreditMicros, err = ParseUSD(p.Credit); err != nil || p.CreditMicros <= 0 {
			return nil, fmt.Errorf("pack %s: credit: invalid", p.ID)
		}
	}
	return &t, nil
}

// Quote prices pages (plus an optional cover page) to a checked destination.
func (t *PriceTable) Quote(e164, country string, pages int, cover bool) (Quote, error) {
	tr, ok := t.byCountry[country]
	if !ok {
		return Quote{}, Errorf(KindUnprocessable, CodeUnsupportedDestination, "faxhub does not send to %s yet", country).With("country", country)
	}
	if pages < 1 {
		return Quote{}, Errorf(KindInvalid, CodeInvalidRequest, "pages must be at least 1")
	}
	amount := int64(pages) * tr.perPage
	billed := pages
	if cover {
		amount += tr.cover
		billed++
	}
	amount = max(amount, tr.minimum)
	return Quote{
		To: e164, Country: country, Pages: pages, Cover: cover, BilledPages: billed,
		Currency: Currency, AmountMicros: amount, Amount: FormatUSD(amount), Cents: CentsUp(amount),
		Tariff: tr.ID,
	}, nil
}

// TariffFor is the tariff of country, if faxhub sends there.
func (t *PriceTable) TariffFor(country string) (Tariff, bool) {
	tr, ok := t.byCountry[country]
	if !ok {
		return Tariff{}, false
	}
	return *tr, true
}

// NumberMonthly is the monthly price of a number in country, or a
// numbers_not_offered *Error.
func (t *PriceTable) NumberMonthly(country string) (int64, error) {
	if tr, ok := t.byCountry[country]; ok && tr.numberMonthly > 0 {
		return tr.numberMonthly, nil
	}
	return 0, Errorf(KindUnprocessable, CodeNumbersNotOffered, "faxhub does not rent fax numbers in %s", country).With("country", country)
}

// Pack finds a credit pack by id.
func (t *PriceTable) Pack(id string) (CreditPack, bool) {
	i := slices.IndexFunc(t.Packs, func(p CreditPack) bool { return p.ID == id })
	if i < 0 {
		return CreditPack{}, false
	}
	return t.Packs[i], true
}

// Quote is a price for sending a number of pages to one destination. Its
// JSON is also how every agent door shows a quote (MCP validate_fax infers
// its output schema from this type: the jsonschema tags describe fields
// there; hostagent renders the same keys in snake_case).
type Quote struct {
	To           string `json:"to" jsonschema:"the destination in E.164"`
	Country      string `json:"country"` // ISO 3166-1 alpha-2
	Pages        int    `json:"pages"`
	Cover        bool   `json:"cover"`
	BilledPages  int    `json:"billedPages"` // pages plus the cover page
	Currency     string `json:"currency"`
	AmountMicros int64  `json:"-"`
	// Amount is the decimal USD string ("0.21"); Cents is the same in cents.
	Amount string `json:"amount" jsonschema:"price in USD, decimal"`
	Cents  int64  `json:"amountCents"`
	Tariff string `json:"tariff"`
}
