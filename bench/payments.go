package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// paymentGen makes the bodies of --payload payments: JSON payment events as
// a payment service produces them. What decides how well they compress
// varies as it does in such a stream: every event has its own ids,
// idempotency key, amount and timestamp, and draws its currency, status,
// card brand and countries from skewed distributions and its merchant from
// a few hundred (some much busier than others); the field names and a
// merchant's details repeat.
type paymentGen struct {
	rng       *rand.Rand
	merchants []paymentMerchant
	start     time.Time
}

type paymentMerchant struct{ id, name, mcc, country string }

// weighted is a value drawn with probability weight / the list's total.
type weighted struct {
	v      string
	weight int
}

var (
	paymentCurrencies = []weighted{{"EUR", 40}, {"USD", 25}, {"GBP", 12}, {"CHF", 5}, {"SEK", 5}, {"PLN", 5}, {"DKK", 4}, {"NOK", 4}}
	paymentStatuses   = []weighted{{"succeeded", 82}, {"pending", 6}, {"failed", 6}, {"refunded", 4}, {"disputed", 1}, {"canceled", 1}}
	paymentBrands     = []weighted{{"visa", 52}, {"mastercard", 35}, {"amex", 8}, {"cartes_bancaires", 3}, {"discover", 2}}
	paymentFunding    = []weighted{{"credit", 55}, {"debit", 42}, {"prepaid", 3}}
	paymentChannels   = []weighted{{"web", 55}, {"ios", 20}, {"android", 18}, {"pos", 7}}
	paymentCountries  = []weighted{{"DE", 22}, {"FR", 16}, {"GB", 14}, {"NL", 8}, {"ES", 8}, {"IT", 8}, {"US", 10}, {"SE", 4}, {"PL", 4}, {"CH", 3}, {"BE", 3}}
	paymentMCCs       = []string{"5812", "5814", "5411", "5999", "4121", "5732", "5691", "7011", "4511", "5942", "5311", "5912"}
	merchantWords1    = []string{"Blue", "Nordic", "Golden", "Urban", "Green", "Little", "Grand", "Silver", "Happy", "Royal", "Alpine", "Coastal", "Red", "Bright", "Old Town"}
	merchantWords2    = []string{"Harbor", "Parcel", "Bean", "Market", "Bakery", "Cycles", "Books", "Garden", "Kitchen", "Travel", "Pharmacy", "Studio", "Outfitters", "Electronics", "Cab"}
	merchantSuffixes  = []string{"", "", " GmbH", " Ltd", " SAS", " BV", " AB", " Inc", " & Co"}
	firstNames        = []string{"Anna", "Lukas", "Emma", "Noah", "Mia", "Louis", "Olivia", "Jan", "Sofia", "Lars", "Chloe", "Marco", "Eva", "Tom", "Julia", "Piotr", "Ines", "Sam"}
	lastNames         = []string{"Müller", "Martin", "Smith", "de Vries", "García", "Rossi", "Johansson", "Kowalski", "Meier", "Dubois", "Jones", "Bianchi", "Jansen", "Schmidt"}
	streets           = []string{"Main Street", "Hauptstraße", "Rue de la Paix", "Kerkstraat", "Calle Mayor", "Via Roma", "Storgatan", "ul. Długa", "Bahnhofstrasse", "High Street"}
	cities            = []string{"Berlin", "Paris", "London", "Amsterdam", "Madrid", "Milan", "Stockholm", "Warsaw", "Zurich", "Brussels", "Munich", "Lyon", "Manchester"}
	secureResults     = []weighted{{"authenticated", 78}, {"attempt_acknowledged", 9}, {"not_supported", 8}, {"failed", 5}}
	descriptionWords  = []string{"order", "subscription", "monthly", "plan", "coffee", "flat", "white", "croissant", "delivery", "fee", "ticket", "return",
		"invoice", "booking", "room", "night", "ride", "city", "centre", "airport", "book", "gift", "card", "top-up", "refill", "basket", "items",
		"express", "shipping", "standard", "premium", "annual", "renewal", "tip", "service", "charge", "voucher", "discount", "x1", "x2", "x3"}
)

func newPaymentGen(rng *rand.Rand) *paymentGen {
	g := &paymentGen{rng: rng, start: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	for range 400 {
		g.merchants = append(g.merchants, paymentMerchant{
			id:      "mer_" + g.alnum(14),
			name:    g.pick(merchantWords1) + " " + g.pick(merchantWords2) + g.pick(merchantSuffixes),
			mcc:     g.pick(paymentMCCs),
			country: g.weighted(paymentCountries),
		})
	}
	return g
}

const alnumChars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (g *paymentGen) alnum(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnumChars[g.rng.IntN(len(alnumChars))]
	}
	return string(b)
}

func (g *paymentGen) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

func (g *paymentGen) weighted(ws []weighted) string {
	total := 0
	for _, w := range ws {
		total += w.weight
	}
	n := g.rng.IntN(total)
	for _, w := range ws {
		if n -= w.weight; n < 0 {
			return w.v
		}
	}
	return ws[len(ws)-1].v
}

// event is payment event i as JSON of exactly size bytes: its fields, most
// telling first, as many as fit, then a description of words that pads it
// to size (or spaces, where there is no room for one). Below 2 bytes there
// is no room for JSON at all: spaces.
func (g *paymentGen) event(i, size int) []byte {
	if size < len("{}") {
		return []byte(strings.Repeat(" ", size))
	}
	m := g.merchants[int(float64(len(g.merchants))*math.Pow(g.rng.Float64(), 2))] // the busy ones first
	created := g.start.Add(time.Duration(i)*40*time.Millisecond + time.Duration(g.rng.IntN(40))*time.Millisecond)
	amount := int64(math.Exp(g.rng.NormFloat64()*1.1+8.3)) + 50 // minor units: around 40.00, a long tail
	risk := g.rng.IntN(100)
	fields := []string{
		`"id":"pay_` + g.alnum(22) + `"`,
		fmt.Sprintf(`"amount":%d`, amount),
		`"currency":"` + g.weighted(paymentCurrencies) + `"`,
		`"status":"` + g.weighted(paymentStatuses) + `"`,
		`"created":"` + created.Format("2006-01-02T15:04:05.000Z") + `"`,
		`"merchant":{"id":"` + m.id + `","name":"` + m.name + `","mcc":"` + m.mcc + `","country":"` + m.country + `"}`,
		`"customer":{"id":"cus_` + g.alnum(14) + `","country":"` + g.weighted(paymentCountries) + `"}`,
		fmt.Sprintf(`"payment_method":{"type":"card","brand":"%s","last4":"%04d","exp_month":%d,"exp_year":%d,"funding":"%s"}`,
			g.weighted(paymentBrands), g.rng.IntN(10000), 1+g.rng.IntN(12), 2026+g.rng.IntN(6), g.weighted(paymentFunding)),
		`"capture_method":"automatic"`,
		fmt.Sprintf(`"risk":{"score":%d,"level":"%s"}`, risk, riskLevel(risk)),
		fmt.Sprintf(`"idempotency_key":"%08x-%04x-4%03x-%04x-%012x"`, g.rng.Uint32(), g.rng.IntN(1<<16), g.rng.IntN(1<<12), 0x8000|g.rng.IntN(1<<14), g.rng.Int64N(1<<48)),
		fmt.Sprintf(`"metadata":{"order_id":"ord_%08d","channel":"%s"}`, g.rng.IntN(100_000_000), g.weighted(paymentChannels)),
		fmt.Sprintf(`"fee":%d`, amount*14/1000+25),
		`"statement_descriptor":"` + strings.ToUpper(m.name[:min(len(m.name), 22)]) + `"`,
		fmt.Sprintf(`"billing_details":{"name":"%s %s","email_sha256":"%016x","address":{"line1":"%d %s","city":"%s","postal_code":"%05d","country":"%s"}}`,
			g.pick(firstNames), g.pick(lastNames), g.rng.Uint64(), 1+g.rng.IntN(200), g.pick(streets), g.pick(cities), g.rng.IntN(100000), g.weighted(paymentCountries)),
		`"three_d_secure":{"version":"2.2.0","result":"` + g.weighted(secureResults) + `"}`,
		fmt.Sprintf(`"network_transaction_id":"%015d","authorization_code":"%s"`, g.rng.Int64N(1e15), strings.ToUpper(g.alnum(6))),
		`"livemode":true`,
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for _, f := range fields {
		if len(b)+len(",")+len(f)+len("}") > size {
			break
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, f...)
	}
	const key = `"description":""`
	room := size - len(b) - len("}")
	if len(b) > 1 {
		room -= len(",")
	}
	if room > len(key) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, key[:len(key)-1]...)
		b = g.words(b, room-len(key))
		b = append(b, '"')
	}
	for len(b) < size-1 {
		b = append(b, ' ')
	}
	return append(b, '}')
}

// words appends n bytes of words separated by spaces.
func (g *paymentGen) words(b []byte, n int) []byte {
	end := len(b) + n
	for len(b) < end {
		w := g.pick(descriptionWords)
		if g.rng.IntN(6) == 0 {
			w = fmt.Sprint(1 + g.rng.IntN(500))
		}
		b = append(b, w...)
		if len(b) < end {
			b = append(b, ' ')
		}
	}
	return b[:end]
}

func riskLevel(score int) string {
	switch {
	case score >= 90:
		return "highest"
	case score >= 65:
		return "elevated"
	}
	return "normal"
}
