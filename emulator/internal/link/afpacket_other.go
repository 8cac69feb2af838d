//go:build !linux

package link

import "errors"

// AFPacket is only available on Linux.
type AFPacket struct{ Memory }

// OpenAFPacket fails: raw packet sockets are a Linux feature.
func OpenAFPacket(ifname string, rcvbuf int) (*AFPacket, error) {
	return nil, errors.New("raw AF_PACKET sockets need Linux")
}

// Drops is always zero.
func (l *AFPacket) Drops() uint64 { return 0 }
