// Package auth is the peer (client) side of PPP authentication: PAP
// (RFC 1334), CHAP with MD5 (RFC 1994) and MS-CHAPv2 (RFC 2759, with its own
// MD4). The BNG is the authenticator; it picks the method in LCP.
package auth

import (
	"crypto/md5"
	"errors"
	"fmt"
	"strings"

	"p4bng/emulator/internal/ppp"
)

// Method is an authentication protocol as LCP's Authentication-Protocol
// option names it.
type Method uint8

// Methods.
const (
	None Method = iota
	PAP
	CHAPMD5
	MSCHAPv2
)

// CHAP algorithm numbers carried in the LCP option (RFC 1994, RFC 2759).
const (
	CHAPAlgMD5      = 5
	CHAPAlgMSCHAPv2 = 0x81
)

func (m Method) String() string {
	return [...]string{"none", "pap", "chap", "mschapv2"}[m]
}

// ParseMethod reads a --auth list item.
func ParseMethod(s string) (Method, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pap":
		return PAP, nil
	case "chap", "chap-md5", "md5":
		return CHAPMD5, nil
	case "mschapv2", "ms-chapv2", "mschap-v2":
		return MSCHAPv2, nil
	}
	return None, fmt.Errorf("unknown authentication method %q (pap, chap, mschapv2)", s)
}

// Protocol is the PPP protocol that carries the method's packets.
func (m Method) Protocol() ppp.Protocol {
	if m == PAP {
		return ppp.ProtoPAP
	}
	return ppp.ProtoCHAP
}

// OptionData is the Authentication-Protocol option value for the method.
func (m Method) OptionData() []byte {
	switch m {
	case PAP:
		return []byte{0xc0, 0x23}
	case CHAPMD5:
		return []byte{0xc2, 0x23, CHAPAlgMD5}
	case MSCHAPv2:
		return []byte{0xc2, 0x23, CHAPAlgMSCHAPv2}
	}
	return nil
}

// MethodFromOption decodes an Authentication-Protocol option value; ok is
// false for methods we do not implement (CHAP with SHA-1, EAP, MS-CHAPv1...).
func MethodFromOption(data []byte) (Method, bool) {
	switch {
	case len(data) == 2 && data[0] == 0xc0 && data[1] == 0x23:
		return PAP, true
	case len(data) == 3 && data[0] == 0xc2 && data[1] == 0x23 && data[2] == CHAPAlgMD5:
		return CHAPMD5, true
	case len(data) == 3 && data[0] == 0xc2 && data[1] == 0x23 && data[2] == CHAPAlgMSCHAPv2:
		return MSCHAPv2, true
	}
	return None, false
}

// Packet codes of PAP and CHAP.
const (
	PAPAuthenticateRequest ppp.Code = 1
	PAPAuthenticateAck     ppp.Code = 2
	PAPAuthenticateNak     ppp.Code = 3
	CHAPChallenge          ppp.Code = 1
	CHAPResponse           ppp.Code = 2
	CHAPSuccess            ppp.Code = 3
	CHAPFailure            ppp.Code = 4
)

// Outcome is what a received authentication packet meant.
type Outcome uint8

// Outcomes.
const (
	Pending          Outcome = iota // nothing decided (a challenge was answered, a stale packet...)
	Success                         // the authenticator accepted us
	Failure                         // the authenticator rejected us
	BadAuthenticator                // MS-CHAPv2 Success without the right "S=" proof
	Malformed                       // undecodable packet, ignored
	WrongIdentifier                 // a CHAP Success/Failure not for our last Response, ignored
)

// Random is the source of MS-CHAPv2 peer challenges.
type Random interface{ Read(p []byte) (int, error) }

// Client runs the peer side of one authentication exchange. It builds the
// packets; the session sends them and runs the retransmission timer.
type Client struct {
	Method   Method
	Username string
	Password string
	rnd      Random

	id        uint8  // Identifier of our last PAP request / CHAP response
	attempts  int    // PAP requests sent
	responded bool   // a CHAP Response has been built
	msAuth    string // expected MS-CHAPv2 authenticator response
	Message   string // the authenticator's last Failure/Nak message
}

// ErrNoRequest is returned by Request for CHAP methods, where the
// authenticator speaks first.
var ErrNoRequest = errors.New("auth: CHAP waits for the authenticator's challenge")

// NewClient prepares an exchange.
func NewClient(m Method, username, password string, rnd Random) Client {
	return Client{Method: m, Username: username, Password: password, rnd: rnd}
}

// Attempts is the number of PAP Authenticate-Requests sent so far.
func (c *Client) Attempts() int { return c.attempts }

// Request appends a new PAP Authenticate-Request (a new Identifier each
// time, RFC 1334 2.2.1) to b.
func (c *Client) Request(b []byte, id uint8) ([]byte, error) {
	if c.Method != PAP {
		return b, ErrNoRequest
	}
	c.id = id
	c.attempts++
	b, off := ppp.AppendPacketHeader(b, PAPAuthenticateRequest, id)
	b = append(b, byte(len(c.Username)))
	b = append(b, c.Username...)
	b = append(b, byte(len(c.Password)))
	b = append(b, c.Password...)
	ppp.SetPacketLength(b, off)
	return b, nil
}

// Input decodes a PAP or CHAP packet from the authenticator. For a CHAP
// Challenge it appends our Response to reply.
func (c *Client) Input(pkt []byte, reply []byte) (Outcome, []byte) {
	p, err := ppp.ParsePacket(pkt)
	if err != nil {
		return Malformed, reply
	}
	if c.Method == PAP {
		return c.papInput(p), reply
	}
	return c.chapInput(p, reply)
}

func (c *Client) papInput(p ppp.Packet) Outcome {
	if p.Code != PAPAuthenticateAck && p.Code != PAPAuthenticateNak {
		return Malformed
	}
	if p.ID != c.id || c.attempts == 0 {
		return Pending // an answer to an older request
	}
	if len(p.Data) < 1 || int(p.Data[0]) > len(p.Data)-1 {
		return Malformed
	}
	c.Message = string(p.Data[1 : 1+int(p.Data[0])])
	if p.Code == PAPAuthenticateAck {
		return Success
	}
	return Failure
}

func (c *Client) chapInput(p ppp.Packet, reply []byte) (Outcome, []byte) {
	switch p.Code {
	case CHAPChallenge:
		if len(p.Data) < 1 || int(p.Data[0]) > len(p.Data)-1 || p.Data[0] == 0 {
			return Malformed, reply
		}
		challenge := p.Data[1 : 1+int(p.Data[0])]
		c.id = p.ID
		c.responded = true
		if c.Method == CHAPMD5 {
			h := md5.New()
			h.Write([]byte{p.ID})
			h.Write([]byte(c.Password))
			h.Write(challenge)
			var sum [16]byte
			h.Sum(sum[:0])
			return Pending, appendCHAPResponse(reply, p.ID, sum[:], c.Username)
		}
		if len(challenge) != 16 {
			return Malformed, reply
		}
		var authChallenge, peerChallenge [16]byte
		copy(authChallenge[:], challenge)
		if _, err := c.rnd.Read(peerChallenge[:]); err != nil {
			return Malformed, reply
		}
		nt := GenerateNTResponse(authChallenge, peerChallenge, c.Username, c.Password)
		c.msAuth = GenerateAuthenticatorResponse(c.Password, nt, peerChallenge, authChallenge, c.Username)
		v := MSCHAPv2ResponseValue(peerChallenge, nt)
		return Pending, appendCHAPResponse(reply, p.ID, v[:], c.Username)
	case CHAPSuccess, CHAPFailure:
		// RFC 1994 4.2: Success and Failure copy the Identifier of the
		// Response that caused them; any other answers no Response of ours.
		if !c.responded || p.ID != c.id {
			return WrongIdentifier, reply
		}
	}
	switch p.Code {
	case CHAPSuccess:
		if c.Method == MSCHAPv2 {
			if c.msAuth == "" || !CheckAuthenticatorResponse(p.Data, c.msAuth) {
				c.Message = string(p.Data)
				return BadAuthenticator, reply
			}
		}
		return Success, reply
	case CHAPFailure:
		c.Message = string(p.Data)
		return Failure, reply
	}
	return Malformed, reply
}

func appendCHAPResponse(b []byte, id uint8, value []byte, name string) []byte {
	b, off := ppp.AppendPacketHeader(b, CHAPResponse, id)
	b = append(b, byte(len(value)))
	b = append(b, value...)
	b = append(b, name...)
	ppp.SetPacketLength(b, off)
	return b
}
