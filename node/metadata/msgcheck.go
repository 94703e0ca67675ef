package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxMsgpackDepth bounds container nesting in untrusted msgpack.
const maxMsgpackDepth = 32

var errMsgpack = errors.New("metadata: malformed msgpack")

// checkMsgpack verifies that b is exactly one well-formed msgpack value whose
// every declared length fits in the bytes present and whose nesting is at most
// maxMsgpackDepth. Run it before handing untrusted bytes to msgpack.Unmarshal,
// whose allocation guard for declared lengths is broken (upstream #401): after
// this check no declared count exceeds the input size.
func checkMsgpack(b []byte) error {
	// stack holds, per open container, the number of values still to read.
	var stack [maxMsgpackDepth + 1]int
	depth := 0
	stack[0] = 1
	pos := 0
	need := func(n uint64) error {
		if n > uint64(len(b)-pos) {
			return fmt.Errorf("%w: length %d at byte %d exceeds the %d bytes left", errMsgpack, n, pos, len(b)-pos)
		}
		return nil
	}
	u := func(n int) (uint64, error) {
		if err := need(uint64(n)); err != nil {
			return 0, err
		}
		var v uint64
		switch n {
		case 1:
			v = uint64(b[pos])
		case 2:
			v = uint64(binary.BigEndian.Uint16(b[pos:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(b[pos:]))
		}
		pos += n
		return v, nil
	}
	for {
		for depth >= 0 && stack[depth] == 0 {
			depth--
		}
		if depth < 0 {
			break
		}
		stack[depth]--
		if pos >= len(b) {
			return fmt.Errorf("%w: truncated at byte %d", errMsgpack, pos)
		}
		c := b[pos]
		pos++
		var skip uint64  // raw bytes that follow
		var items uint64 // values inside a new container
		container := false
		var err error
		switch {
		case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items, container = 2*uint64(c&0x0f), true
		case c >= 0x90 && c <= 0x9f:
			items, container = uint64(c&0x0f), true
		case c >= 0xa0 && c <= 0xbf:
			skip = uint64(c & 0x1f)
		case c == 0xc4 || c == 0xd9:
			skip, err = u(1)
		case c == 0xc5 || c == 0xda:
			skip, err = u(2)
		case c == 0xc6 || c == 0xdb:
			skip, err = u(4)
		case c == 0xc7:
			skip, err = u(1)
			skip++
		case c == 0xc8:
			skip, err = u(2)
			skip++
		case c == 0xc9:
			skip, err = u(4)
			skip++
		case c == 0xca:
			skip = 4
		case c == 0xcb:
			skip = 8
		case c == 0xcc, c == 0xd0:
			skip = 1
		case c == 0xcd, c == 0xd1:
			skip = 2
		case c == 0xce, c == 0xd2:
			skip = 4
		case c == 0xcf, c == 0xd3:
			skip = 8
		case c >= 0xd4 && c <= 0xd8:
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc:
			items, err = u(2)
			container = true
		case c == 0xdd:
			items, err = u(4)
			container = true
		case c == 0xde:
			items, err = u(2)
			items *= 2
			container = true
		case c == 0xdf:
			items, err = u(4)
			items *= 2
			container = true
		default: // 0xc1
			return fmt.Errorf("%w: invalid byte 0x%02x at %d", errMsgpack, c, pos-1)
		}
		if err != nil {
			return err
		}
		if err := need(skip); err != nil {
			return err
		}
		pos += int(skip)
		if container && items > 0 {
			if err := need(items); err != nil { // every value takes at least one byte
				return err
			}
			if depth == maxMsgpackDepth {
				return fmt.Errorf("%w: nested deeper than %d", errMsgpack, maxMsgpackDepth)
			}
			depth++
			stack[depth] = int(items)
		}
	}
	if pos != len(b) {
		return fmt.Errorf("%w: %d trailing bytes", errMsgpack, len(b)-pos)
	}
	return nil
}
