package quic

import (
	"encoding/binary"
	"fmt"
)

// maxNesting bounds how deep arrays and maps may nest in one body.
const maxNesting = 32

// checkMsgpack verifies that b holds exactly one well-formed msgpack value
// whose every declared length fits in the bytes that follow it, before any
// decoder allocates for it:
//
//   - str, bin and ext lengths must not exceed the remaining bytes;
//   - an array of n elements needs at least n remaining bytes, a map of n
//     entries at least 2n (every value is at least one byte);
//   - all array elements and map entries in b together may not exceed maxItems;
//   - arrays and maps nest at most maxNesting deep;
//   - map keys are strings or integers (anything else can make a decoder into
//     interface{} panic on an unhashable key);
//   - the never-used code 0xc1 and trailing bytes are rejected.
//
// It allocates nothing and runs in time linear in len(b).
func checkMsgpack(b []byte, maxItems int) error {
	_, err := countMsgpack(b, maxItems)
	return err
}

// countMsgpack is checkMsgpack also returning the number of list elements
// and map entries in b.
func countMsgpack(b []byte, maxItems int) (int, error) {
	c := msgpackChecker{b: b, budget: maxItems}
	if err := c.value(0); err != nil {
		return 0, err
	}
	if c.pos != len(b) {
		return 0, fmt.Errorf("%d trailing bytes after the msgpack value", len(b)-c.pos)
	}
	return maxItems - c.budget, nil
}

type msgpackChecker struct {
	b      []byte
	pos    int
	budget int // list elements and map entries still allowed
}

func (c *msgpackChecker) remaining() int { return len(c.b) - c.pos }

// value checks one value at c.pos at nesting depth d.
func (c *msgpackChecker) value(d int) error {
	if c.pos >= len(c.b) {
		return fmt.Errorf("truncated msgpack value at byte %d", c.pos)
	}
	code := c.b[c.pos]
	c.pos++
	switch {
	case code <= 0x7f || code >= 0xe0: // positive / negative fixint
		return nil
	case code <= 0x8f: // fixmap
		return c.mapEntries(int(code&0x0f), d)
	case code <= 0x9f: // fixarray
		return c.arrayElems(int(code&0x0f), d)
	case code <= 0xbf: // fixstr
		return c.skip(int(code&0x1f), "str")
	}
	switch code {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return nil
	case 0xc4, 0xd9: // bin8, str8
		return c.sized(1, 0, code)
	case 0xc5, 0xda: // bin16, str16
		return c.sized(2, 0, code)
	case 0xc6, 0xdb: // bin32, str32
		return c.sized(4, 0, code)
	case 0xc7: // ext8: length, type, data
		return c.sized(1, 1, code)
	case 0xc8: // ext16
		return c.sized(2, 1, code)
	case 0xc9: // ext32
		return c.sized(4, 1, code)
	case 0xcc, 0xd0: // uint8, int8
		return c.skip(1, "int")
	case 0xcd, 0xd1: // uint16, int16
		return c.skip(2, "int")
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return c.skip(4, "number")
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return c.skip(8, "number")
	case 0xd4: // fixext1: type + 1
		return c.skip(2, "ext")
	case 0xd5:
		return c.skip(3, "ext")
	case 0xd6:
		return c.skip(5, "ext")
	case 0xd7:
		return c.skip(9, "ext")
	case 0xd8:
		return c.skip(17, "ext")
	case 0xdc: // array16
		n, err := c.length(2)
		if err != nil {
			return err
		}
		return c.arrayElems(n, d)
	case 0xdd: // array32
		n, err := c.length(4)
		if err != nil {
			return err
		}
		return c.arrayElems(n, d)
	case 0xde: // map16
		n, err := c.length(2)
		if err != nil {
			return err
		}
		return c.mapEntries(n, d)
	case 0xdf: // map32
		n, err := c.length(4)
		if err != nil {
			return err
		}
		return c.mapEntries(n, d)
	}
	return fmt.Errorf("invalid msgpack code 0x%02x at byte %d", code, c.pos-1)
}

// length reads a big-endian length field of size bytes.
func (c *msgpackChecker) length(size int) (int, error) {
	if c.remaining() < size {
		return 0, fmt.Errorf("truncated msgpack length at byte %d", c.pos)
	}
	var n uint64
	switch size {
	case 1:
		n = uint64(c.b[c.pos])
	case 2:
		n = uint64(binary.BigEndian.Uint16(c.b[c.pos:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(c.b[c.pos:]))
	}
	c.pos += size
	if n > uint64(len(c.b)) { // keeps int conversion safe on 32-bit platforms
		return 0, fmt.Errorf("msgpack length %d at byte %d exceeds the %d-byte body", n, c.pos-size, len(c.b))
	}
	return int(n), nil
}

// sized checks a str/bin/ext whose length field has size bytes, followed by
// extra bytes (the ext type) and the data.
func (c *msgpackChecker) sized(size, extra int, code byte) error {
	n, err := c.length(size)
	if err != nil {
		return err
	}
	if extra+n > c.remaining() { // the message is built only on failure: this runs for every value
		return fmt.Errorf("msgpack value 0x%02x of %d bytes at byte %d exceeds the %d remaining", code, extra+n, c.pos, c.remaining())
	}
	c.pos += extra + n
	return nil
}

func (c *msgpackChecker) skip(n int, what string) error {
	if n > c.remaining() {
		return fmt.Errorf("msgpack %s of %d bytes at byte %d exceeds the %d remaining", what, n, c.pos, c.remaining())
	}
	c.pos += n
	return nil
}

func (c *msgpackChecker) take(n int, d int, what string) error {
	if d >= maxNesting {
		return fmt.Errorf("msgpack nesting deeper than %d at byte %d", maxNesting, c.pos)
	}
	if n > c.budget {
		return fmt.Errorf("msgpack %s of %d items at byte %d exceeds the item limit (%d left)", what, n, c.pos, c.budget)
	}
	c.budget -= n
	return nil
}

func (c *msgpackChecker) arrayElems(n, d int) error {
	if n > c.remaining() {
		return fmt.Errorf("msgpack array of %d elements at byte %d cannot fit in %d remaining bytes", n, c.pos, c.remaining())
	}
	if err := c.take(n, d, "array"); err != nil {
		return err
	}
	for range n {
		if err := c.value(d + 1); err != nil {
			return err
		}
	}
	return nil
}

func (c *msgpackChecker) mapEntries(n, d int) error {
	if n > c.remaining()/2 {
		return fmt.Errorf("msgpack map of %d entries at byte %d cannot fit in %d remaining bytes", n, c.pos, c.remaining())
	}
	if err := c.take(n, d, "map"); err != nil {
		return err
	}
	for range n {
		if err := c.mapKey(); err != nil {
			return err
		}
		if err := c.value(d + 1); err != nil {
			return err
		}
	}
	return nil
}

// mapKey accepts a string or integer key.
func (c *msgpackChecker) mapKey() error {
	if c.pos >= len(c.b) {
		return fmt.Errorf("truncated msgpack map key at byte %d", c.pos)
	}
	code := c.b[c.pos]
	switch {
	case code <= 0x7f || code >= 0xe0, code >= 0xa0 && code <= 0xbf,
		code == 0xd9 || code == 0xda || code == 0xdb,
		code >= 0xcc && code <= 0xd3:
		return c.value(0)
	}
	return fmt.Errorf("msgpack map key of type 0x%02x at byte %d: only strings and integers are allowed", code, c.pos)
}
