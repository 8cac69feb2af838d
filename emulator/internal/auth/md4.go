package auth

import (
	"encoding/binary"
	"math/bits"
)

// MD4 is the RFC 1320 message digest. MS-CHAPv2 needs it for the NT
// password hash; the Go standard library does not ship it (x/crypto does,
// but the emulator builds offline from the standard library alone).
func MD4(msg []byte) [16]byte {
	a, b, c, d := uint32(0x67452301), uint32(0xefcdab89), uint32(0x98badcfe), uint32(0x10325476)

	// Padding: a 1 bit, zeros to 56 mod 64 bytes, the bit length (LE).
	n := len(msg)
	padded := make([]byte, 0, n+72)
	padded = append(padded, msg...)
	padded = append(padded, 0x80)
	for len(padded)%64 != 56 {
		padded = append(padded, 0)
	}
	padded = binary.LittleEndian.AppendUint64(padded, uint64(n)*8)

	var x [16]uint32
	for blk := 0; blk < len(padded); blk += 64 {
		for i := range x {
			x[i] = binary.LittleEndian.Uint32(padded[blk+4*i:])
		}
		aa, bb, cc, dd := a, b, c, d

		// Round 1: F(x,y,z) = xy v not(x) z
		r1 := func(a, b, c, d uint32, k int, s int) uint32 {
			return bits.RotateLeft32(a+((b&c)|(^b&d))+x[k], s)
		}
		for i := 0; i < 16; i += 4 {
			a = r1(a, b, c, d, i, 3)
			d = r1(d, a, b, c, i+1, 7)
			c = r1(c, d, a, b, i+2, 11)
			b = r1(b, c, d, a, i+3, 19)
		}
		// Round 2: G(x,y,z) = xy v xz v yz, constant sqrt(2)
		r2 := func(a, b, c, d uint32, k int, s int) uint32 {
			return bits.RotateLeft32(a+((b&c)|(b&d)|(c&d))+x[k]+0x5a827999, s)
		}
		for i := 0; i < 4; i++ {
			a = r2(a, b, c, d, i, 3)
			d = r2(d, a, b, c, i+4, 5)
			c = r2(c, d, a, b, i+8, 9)
			b = r2(b, c, d, a, i+12, 13)
		}
		// Round 3: H(x,y,z) = x xor y xor z, constant sqrt(3)
		r3 := func(a, b, c, d uint32, k int, s int) uint32 {
			return bits.RotateLeft32(a+(b^c^d)+x[k]+0x6ed9eba1, s)
		}
		for _, i := range [4]int{0, 2, 1, 3} {
			a = r3(a, b, c, d, i, 3)
			d = r3(d, a, b, c, i+8, 9)
			c = r3(c, d, a, b, i+4, 11)
			b = r3(b, c, d, a, i+12, 15)
		}
		a, b, c, d = a+aa, b+bb, c+cc, d+dd
	}
	var out [16]byte
	binary.LittleEndian.PutUint32(out[0:], a)
	binary.LittleEndian.PutUint32(out[4:], b)
	binary.LittleEndian.PutUint32(out[8:], c)
	binary.LittleEndian.PutUint32(out[12:], d)
	return out
}
