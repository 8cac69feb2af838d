package auth

import (
	"bytes"
	"encoding/hex"
	"math/rand"
	"strings"
	"testing"

	"p4bng/emulator/internal/ppp"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 1320 appendix A.5 test suite.
func TestMD4Vectors(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "31d6cfe0d16ae931b73c59d7e0c089c0",
		"a":                          "bde52cb31de33e46245e05fbdbd6fb24",
		"abc":                        "a448017aaf21d8525fc10ae87aa6729d",
		"message digest":             "d9130a8164549fe818874806e1c7014b",
		"abcdefghijklmnopqrstuvwxyz": "d79e1c308aa5bbcdeea8ed63df412da9",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789":                   "043f8582f241db351ce627e153e7f0e4",
		"12345678901234567890123456789012345678901234567890123456789012345678901234567890": "e33b4ddc9c38f2199c3e7b164fcc0536",
	} {
		got := MD4([]byte(in))
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("MD4(%q) = %x, want %s", in, got, want)
		}
	}
}

// RFC 2759 section 9.2.
func TestMSCHAPv2RFC2759Vectors(t *testing.T) {
	var authC, peerC [16]byte
	copy(authC[:], unhex(t, "5B 5D 7C 7D 7B 3F 2F 3E 3C 2C 60 21 32 26 26 28"))
	copy(peerC[:], unhex(t, "21 40 23 24 25 5E 26 2A 28 29 5F 2B 3A 33 7C 7E"))
	const user, pass = "User", "clientPass"

	ch := ChallengeHash(peerC, authC, user)
	if !bytes.Equal(ch[:], unhex(t, "D0 2E 43 86 BC E9 12 26")) {
		t.Fatalf("ChallengeHash %X", ch)
	}
	ph := NtPasswordHash(pass)
	if !bytes.Equal(ph[:], unhex(t, "44 EB BA 8D 53 12 B8 D6 11 47 44 11 F5 69 89 AE")) {
		t.Fatalf("NtPasswordHash %X", ph)
	}
	nt := GenerateNTResponse(authC, peerC, user, pass)
	if !bytes.Equal(nt[:], unhex(t, "82 30 9E CD 8D 70 8B 5E A0 8F AA 39 81 CD 83 54 42 33 11 4A 3D 85 D6 DF")) {
		t.Fatalf("NT-Response %X", nt)
	}
	hh := HashNtPasswordHash(ph)
	if !bytes.Equal(hh[:], unhex(t, "41 C0 0C 58 4B D2 D9 1C 40 17 A2 A1 2F A5 9F 3F")) {
		t.Fatalf("PasswordHashHash %X", hh)
	}
	if got := GenerateAuthenticatorResponse(pass, nt, peerC, authC, user); got != "S=407A5589115FD0D6209F510FE9C04566932CDA56" {
		t.Fatalf("AuthenticatorResponse %s", got)
	}
	// A Windows domain prefix is not hashed.
	if ChallengeHash(peerC, authC, `CORP\User`) != ch {
		t.Fatal("domain prefix changed the challenge hash")
	}
}

func challenge(id uint8, value []byte, name string) []byte {
	b, off := ppp.AppendPacketHeader(nil, CHAPChallenge, id)
	b = append(b, byte(len(value)))
	b = append(b, value...)
	b = append(b, name...)
	ppp.SetPacketLength(b, off)
	return b
}

func TestCHAPMD5Response(t *testing.T) {
	c := NewClient(CHAPMD5, "user1@lab.test", "secret1", nil)
	chal := make([]byte, 16)
	for i := range chal {
		chal[i] = byte(i)
	}
	out, resp := c.Input(challenge(0x2a, chal, "bng"), nil)
	if out != Pending {
		t.Fatalf("outcome %v", out)
	}
	p, err := ppp.ParsePacket(resp)
	if err != nil || p.Code != CHAPResponse || p.ID != 0x2a || p.Data[0] != 16 {
		t.Fatalf("response %x (%v)", resp, err)
	}
	// MD5(0x2a || "secret1" || 00..0f), computed independently.
	if hex.EncodeToString(p.Data[1:17]) != "67b7af5da95748229ac5f2ac8e080a7d" || string(p.Data[17:]) != "user1@lab.test" {
		t.Fatalf("value %x name %q", p.Data[1:17], p.Data[17:])
	}
	if o, _ := c.Input(ppp.AppendPacket(nil, CHAPSuccess, 0x2b, []byte("welcome")), nil); o != WrongIdentifier {
		t.Fatalf("success for another response -> %v", o)
	}
	if o, _ := c.Input(ppp.AppendPacket(nil, CHAPSuccess, 0x2a, []byte("welcome")), nil); o != Success {
		t.Fatalf("success -> %v", o)
	}
	if o, _ := c.Input(ppp.AppendPacket(nil, CHAPFailure, 0x2b, []byte("no")), nil); o != WrongIdentifier || c.Message != "" {
		t.Fatalf("failure for another response -> %v %q", o, c.Message)
	}
	if o, _ := c.Input(ppp.AppendPacket(nil, CHAPFailure, 0x2a, []byte("no")), nil); o != Failure || c.Message != "no" {
		t.Fatalf("failure -> %v %q", o, c.Message)
	}
	fresh := NewClient(CHAPMD5, "u", "p", nil)
	if o, _ := fresh.Input(ppp.AppendPacket(nil, CHAPSuccess, 0, nil), nil); o != WrongIdentifier {
		t.Fatalf("success before any response -> %v", o)
	}
	if o, _ := c.Input(challenge(1, nil, ""), nil); o != Malformed {
		t.Fatal("empty challenge accepted")
	}
}

// An authenticator that implements RFC 2759 from the same vectors: the
// client must accept its Success and refuse a forged one.
func TestMSCHAPv2ClientChecksAuthenticator(t *testing.T) {
	c := NewClient(MSCHAPv2, "User", "clientPass", rand.New(rand.NewSource(7)))
	authC := unhex(t, "5B5D7C7D7B3F2F3E3C2C602132262628")
	_, resp := c.Input(challenge(3, authC, "bng"), nil)
	p, _ := ppp.ParsePacket(resp)
	if p.Data[0] != MSCHAPv2ResponseLen || string(p.Data[1+MSCHAPv2ResponseLen:]) != "User" {
		t.Fatalf("response %x", resp)
	}
	v := p.Data[1 : 1+MSCHAPv2ResponseLen]
	var peerC, ac [16]byte
	var nt [24]byte
	copy(peerC[:], v[0:16])
	copy(nt[:], v[24:48])
	copy(ac[:], authC)
	if !bytes.Equal(v[16:24], make([]byte, 8)) || v[48] != 0 {
		t.Fatal("reserved/flags not zero")
	}
	if GenerateNTResponse(ac, peerC, "User", "clientPass") != nt {
		t.Fatal("NT-Response does not verify")
	}
	good := GenerateAuthenticatorResponse("clientPass", nt, peerC, ac, "User") + " M=Access granted"
	forged := "S=0000000000000000000000000000000000000000 M=Access granted"
	if o, _ := c.Input(ppp.AppendPacket(nil, CHAPSuccess, 3, []byte(forged)), nil); o != BadAuthenticator {
		t.Fatalf("forged success -> %v", o)
	}
	if o, _ := c.Input(ppp.AppendPacket(nil, CHAPSuccess, 3, []byte(strings.ToLower(good))), nil); o != Success {
		t.Fatalf("good success -> %v", o)
	}
}

func TestPAPExchange(t *testing.T) {
	c := NewClient(PAP, "user7", "pw", nil)
	b, err := c.Request(nil, 9)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, []byte{1, 9, 0, 13, 5, 'u', 's', 'e', 'r', '7', 2, 'p', 'w'}) {
		t.Fatalf("request %x", b)
	}
	if o, _ := c.Input(ppp.AppendPacket(nil, PAPAuthenticateAck, 8, []byte{0}), nil); o != Pending {
		t.Fatal("ack for an older id accepted")
	}
	if o, _ := c.Input(ppp.AppendPacket(nil, PAPAuthenticateNak, 9, []byte{3, 'b', 'a', 'd'}), nil); o != Failure || c.Message != "bad" {
		t.Fatalf("nak -> %v %q", o, c.Message)
	}
	if o, _ := c.Input(ppp.AppendPacket(nil, PAPAuthenticateAck, 9, []byte{4, 'x'}), nil); o != Malformed {
		t.Fatal("message longer than the packet accepted")
	}
	if o, _ := c.Input(ppp.AppendPacket(nil, PAPAuthenticateAck, 9, []byte{0}), nil); o != Success {
		t.Fatal("ack refused")
	}
	chap := NewClient(CHAPMD5, "", "", nil)
	if _, err := chap.Request(nil, 1); err != ErrNoRequest {
		t.Fatal("CHAP client produced a request")
	}
}

func TestMethodOptionRoundTrip(t *testing.T) {
	for _, m := range []Method{PAP, CHAPMD5, MSCHAPv2} {
		got, ok := MethodFromOption(m.OptionData())
		if !ok || got != m {
			t.Fatalf("%v -> %v %v", m, got, ok)
		}
	}
	if _, ok := MethodFromOption([]byte{0xc2, 0x23, 0x80}); ok {
		t.Fatal("MS-CHAPv1 accepted")
	}
}
