//go:build linux

package link

import (
	"encoding/binary"
	"fmt"
	"net"
	"syscall"
	"unsafe"
)

// Linux packet socket constants the syscall package does not name
// (linux/if_packet.h).
const (
	solPacket            = 263
	packetAddMembership  = 1
	packetStatistics     = 6
	packetAuxdata        = 8
	packetIgnoreOutgoing = 23
	packetMrPromisc      = 1
	packetOutgoing       = 4 // sll_pkttype of our own transmissions
	tpStatusVlanValid    = 1 << 4
	tpStatusVlanTPIDOK   = 1 << 6
	ethPAll              = 0x0003
	soRcvbufForce        = 33
)

// tpacketAuxdata is struct tpacket_auxdata: the kernel hands the VLAN tag
// it stripped from the frame here.
type tpacketAuxdata struct {
	Status  uint32
	Len     uint32
	Snaplen uint32
	Mac     uint16
	Net     uint16
	VlanTCI uint16
	VlanTPI uint16
}

type packetMreq struct {
	Ifindex int32
	Type    uint16
	Alen    uint16
	Address [8]byte
}

// AFPacket is a raw packet socket bound to one interface, in promiscuous
// mode (every session has its own MAC), that gives back received frames
// whole: the kernel's receive path moves the outer VLAN tag of a frame into
// metadata (skb->vlan_tci) before a packet socket sees it, so we ask for
// that metadata (PACKET_AUXDATA) and put the tag back with its TPID.
type AFPacket struct {
	fd      int
	ifindex int
	msg     syscall.Msghdr
	iov     syscall.Iovec
	name    syscall.RawSockaddrLinklayer
	oob     [128]byte
	drops   uint64
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// pppoeFilter is a classic BPF program that passes PPPoE discovery and
// session frames, untagged or behind one or two tags (the kernel may
// already have taken the outer one off), and nothing else: a busy link's
// other traffic never reaches user space.
var pppoeFilter = []syscall.SockFilter{
	{Code: 0x28, K: 12},                    // 0: ldh [12]
	{Code: 0x15, Jt: 13, Jf: 0, K: 0x8863}, // 1: discovery -> accept
	{Code: 0x15, Jt: 12, Jf: 0, K: 0x8864}, // 2: session -> accept
	{Code: 0x15, Jt: 2, Jf: 0, K: 0x8100},  // 3: tag -> 6
	{Code: 0x15, Jt: 1, Jf: 0, K: 0x88a8},  // 4: tag -> 6
	{Code: 0x15, Jt: 0, Jf: 8, K: 0x9100},  // 5: tag -> 6, else reject
	{Code: 0x28, K: 16},                    // 6: ldh [16]
	{Code: 0x15, Jt: 7, Jf: 0, K: 0x8863},  // 7: accept
	{Code: 0x15, Jt: 6, Jf: 0, K: 0x8864},  // 8: accept
	{Code: 0x15, Jt: 1, Jf: 0, K: 0x8100},  // 9: second tag -> 11
	{Code: 0x15, Jt: 0, Jf: 3, K: 0x88a8},  // 10: second tag -> 11, else reject
	{Code: 0x28, K: 20},                    // 11: ldh [20]
	{Code: 0x15, Jt: 2, Jf: 0, K: 0x8863},  // 12: accept
	{Code: 0x15, Jt: 1, Jf: 0, K: 0x8864},  // 13: accept, else reject
	{Code: 0x06, K: 0},                     // 14: reject
	{Code: 0x06, K: 0x40000},               // 15: accept (whole frame)
}

// OpenAFPacket opens the interface. rcvbuf is the socket receive buffer in
// bytes (SO_RCVBUFFORCE as root, else capped by net.core.rmem_max).
func OpenAFPacket(ifname string, rcvbuf int) (*AFPacket, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	// Protocol 0 receives nothing until bind, so the filter is in place
	// before the first frame is queued.
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("packet socket: %w (needs root or CAP_NET_RAW)", err)
	}
	l := &AFPacket{fd: fd, ifindex: ifi.Index}
	fail := func(what string, err error) (*AFPacket, error) {
		syscall.Close(fd)
		return nil, fmt.Errorf("%s on %s: %w", what, ifname, err)
	}
	if err := syscall.AttachLsf(fd, pppoeFilter); err != nil {
		return fail("attaching the PPPoE filter", err)
	}
	if err := syscall.SetsockoptInt(fd, solPacket, packetAuxdata, 1); err != nil {
		return fail("PACKET_AUXDATA", err)
	}
	// Not fatal before Linux 4.20; outgoing frames are also skipped by
	// their packet type.
	_ = syscall.SetsockoptInt(fd, solPacket, packetIgnoreOutgoing, 1)
	if rcvbuf > 0 {
		if syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, soRcvbufForce, rcvbuf) != nil {
			_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
		}
	}
	tv := syscall.NsecToTimeval(PollInterval.Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return fail("SO_RCVTIMEO", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	mreq := packetMreq{Ifindex: int32(ifi.Index), Type: packetMrPromisc}
	if _, _, e := syscall.Syscall6(syscall.SYS_SETSOCKOPT, uintptr(fd), solPacket, packetAddMembership,
		uintptr(unsafe.Pointer(&mreq)), unsafe.Sizeof(mreq), 0); e != 0 {
		return fail("promiscuous mode", e)
	}
	l.msg.Name = (*byte)(unsafe.Pointer(&l.name))
	l.msg.Namelen = uint32(unsafe.Sizeof(l.name))
	l.msg.Iov = &l.iov
	l.msg.Iovlen = 1
	l.msg.Control = &l.oob[0]
	return l, nil
}

// Send implements Link: the socket is bound, so a plain write goes out on
// the interface with the frame exactly as built (tags included).
func (l *AFPacket) Send(frame []byte) error {
	for {
		_, err := syscall.Write(l.fd, frame)
		if err == syscall.EINTR {
			continue
		}
		return err
	}
}

// recv reads one frame into buf[4:], leaving room in front to re-insert a
// tag, and returns the frame.
func (l *AFPacket) recv(buf []byte, flags int) ([]byte, error) {
	l.iov.Base = &buf[4]
	l.iov.SetLen(len(buf) - 4)
	l.msg.SetControllen(len(l.oob))
	l.msg.Namelen = uint32(unsafe.Sizeof(l.name))
	n, _, e := syscall.Syscall(syscall.SYS_RECVMSG, uintptr(l.fd), uintptr(unsafe.Pointer(&l.msg)), uintptr(flags|syscall.MSG_TRUNC))
	if e != 0 {
		return nil, e
	}
	if l.name.Pkttype == packetOutgoing || int(n) > len(buf)-4 {
		return nil, nil // our own transmission, or a frame too big for us
	}
	frame := buf[4 : 4+int(n)]
	var aux *tpacketAuxdata
	oob := l.oob[:l.msg.Controllen]
	for len(oob) >= syscall.SizeofCmsghdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < syscall.SizeofCmsghdr || int(h.Len) > len(oob) {
			break
		}
		if h.Level == solPacket && h.Type == packetAuxdata && int(h.Len) >= syscall.SizeofCmsghdr+int(unsafe.Sizeof(tpacketAuxdata{})) {
			aux = (*tpacketAuxdata)(unsafe.Pointer(&oob[syscall.SizeofCmsghdr]))
		}
		step := (int(h.Len) + 7) &^ 7
		if step > len(oob) {
			break
		}
		oob = oob[step:]
	}
	if aux != nil && aux.Status&tpStatusVlanValid != 0 && len(frame) >= 12 {
		tpid := uint16(0x8100)
		if aux.Status&tpStatusVlanTPIDOK != 0 && aux.VlanTPI != 0 {
			tpid = aux.VlanTPI
		}
		copy(buf[0:12], buf[4:16])
		binary.BigEndian.PutUint16(buf[12:], tpid)
		binary.BigEndian.PutUint16(buf[14:], aux.VlanTCI)
		frame = buf[:4+int(n)]
	}
	return frame, nil
}

// Receive implements Link: block (up to PollInterval) for one frame, then
// take whatever else is already queued.
func (l *AFPacket) Receive(b *Batch) error {
	b.N = 0
	flags := 0
	for b.N < len(b.bufs) {
		f, err := l.recv(b.bufs[b.N], flags)
		switch err {
		case nil:
		case syscall.EAGAIN, syscall.EINTR:
			return nil
		case syscall.EBADF:
			return ErrClosed
		default:
			return err
		}
		flags = syscall.MSG_DONTWAIT
		if f != nil {
			b.Frames[b.N] = f
			b.N++
		}
	}
	return nil
}

// Drops is the number of frames the kernel dropped because the socket's
// receive buffer was full (PACKET_STATISTICS, accumulated).
func (l *AFPacket) Drops() uint64 {
	var st struct{ Packets, Drops uint32 }
	n := uint32(unsafe.Sizeof(st))
	if _, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(l.fd), solPacket, packetStatistics,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&n)), 0); e == 0 {
		l.drops += uint64(st.Drops)
	}
	return l.drops
}

// Close implements Link.
func (l *AFPacket) Close() error { return syscall.Close(l.fd) }
