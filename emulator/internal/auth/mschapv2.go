package auth

import (
	"crypto/des"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"unicode/utf16"
)

// MS-CHAPv2 (RFC 2759): the peer's NT-Response and the authenticator
// response it checks in the Success packet. The function names follow the
// RFC's section 8 pseudo-code so the two can be read side by side.

// NtPasswordHash is MD4 of the password in UTF-16LE (RFC 2759 8.3).
func NtPasswordHash(password string) [16]byte {
	u := utf16.Encode([]rune(password))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		b[2*i] = byte(c)
		b[2*i+1] = byte(c >> 8)
	}
	return MD4(b)
}

// HashNtPasswordHash is MD4 of the password hash (RFC 2759 8.4).
func HashNtPasswordHash(h [16]byte) [16]byte { return MD4(h[:]) }

// userNameForHash drops a Windows domain prefix ("DOMAIN\user"): RFC 2759
// section 4 hashes only the account name.
func userNameForHash(userName string) string {
	if i := strings.LastIndexByte(userName, '\\'); i >= 0 {
		return userName[i+1:]
	}
	return userName
}

// ChallengeHash is the first 8 octets of SHA1(PeerChallenge ||
// AuthenticatorChallenge || UserName) (RFC 2759 8.2).
func ChallengeHash(peerChallenge, authChallenge [16]byte, userName string) [8]byte {
	h := sha1.New()
	h.Write(peerChallenge[:])
	h.Write(authChallenge[:])
	h.Write([]byte(userNameForHash(userName)))
	var out [8]byte
	copy(out[:], h.Sum(nil))
	return out
}

// desKey spreads 7 key octets over 8, leaving the parity bits (which DES
// ignores) zero (RFC 2759 8.6).
func desKey(k []byte) []byte {
	return []byte{
		k[0] & 0xfe,
		(k[0]<<7 | k[1]>>1) & 0xfe,
		(k[1]<<6 | k[2]>>2) & 0xfe,
		(k[2]<<5 | k[3]>>3) & 0xfe,
		(k[3]<<4 | k[4]>>4) & 0xfe,
		(k[4]<<3 | k[5]>>5) & 0xfe,
		(k[5]<<2 | k[6]>>6) & 0xfe,
		k[6] << 1,
	}
}

// ChallengeResponse DES-encrypts the challenge under three keys cut from the
// zero-padded 21-octet password hash (RFC 2759 8.5).
func ChallengeResponse(challenge [8]byte, passwordHash [16]byte) [24]byte {
	var z [21]byte
	copy(z[:], passwordHash[:])
	var out [24]byte
	for i := 0; i < 3; i++ {
		c, err := des.NewCipher(desKey(z[7*i : 7*i+7]))
		if err != nil {
			panic(err) // cannot happen: the key is always 8 bytes
		}
		c.Encrypt(out[8*i:], challenge[:])
	}
	return out
}

// GenerateNTResponse is the peer's NT-Response (RFC 2759 8.1).
func GenerateNTResponse(authChallenge, peerChallenge [16]byte, userName, password string) [24]byte {
	return ChallengeResponse(ChallengeHash(peerChallenge, authChallenge, userName), NtPasswordHash(password))
}

var (
	magic1 = []byte("Magic server to client signing constant")
	magic2 = []byte("Pad to make it do more than one iteration")
)

// GenerateAuthenticatorResponse is the "S=<40 hex digits>" string the
// authenticator must send in its Success packet (RFC 2759 8.7), proving it
// knows the password too.
func GenerateAuthenticatorResponse(password string, ntResponse [24]byte, peerChallenge, authChallenge [16]byte, userName string) string {
	hh := HashNtPasswordHash(NtPasswordHash(password))
	h := sha1.New()
	h.Write(hh[:])
	h.Write(ntResponse[:])
	h.Write(magic1)
	digest := h.Sum(nil)
	ch := ChallengeHash(peerChallenge, authChallenge, userName)
	h = sha1.New()
	h.Write(digest)
	h.Write(ch[:])
	h.Write(magic2)
	return "S=" + strings.ToUpper(hex.EncodeToString(h.Sum(nil)))
}

// MSCHAPv2ResponseLen is the Value-Size of an MS-CHAPv2 Response.
const MSCHAPv2ResponseLen = 49

// MSCHAPv2ResponseValue lays out the Response value (RFC 2759 section 4):
// Peer-Challenge, 8 reserved zero octets, NT-Response, Flags (zero).
func MSCHAPv2ResponseValue(peerChallenge [16]byte, ntResponse [24]byte) [MSCHAPv2ResponseLen]byte {
	var v [MSCHAPv2ResponseLen]byte
	copy(v[0:16], peerChallenge[:])
	copy(v[24:48], ntResponse[:])
	return v
}

// CheckAuthenticatorResponse reports whether a Success message
// ("S=<auth_string> M=<message>", RFC 2759 section 5) carries the expected
// authenticator response. Hex digits compare case-insensitively.
func CheckAuthenticatorResponse(message []byte, expected string) bool {
	if len(message) < len(expected) {
		return false
	}
	return strings.EqualFold(string(message[:len(expected)]), expected)
}
