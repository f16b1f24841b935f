#!/bin/bash
# Oracle, client, step 2: ask the new DHCP server for a lease once (DISCOVER/OFFER/
# REQUEST/ACK on eth1 with client's own MAC, from a packet socket), so that the server's
# lease table shows client's MAC. The interface is not configured.
set -eu
timeout 80 python3 - <<'PY'
import random
import socket
import struct
import sys
import time

IFACE = "eth1"
ETH_P_IP = 0x0800
MAGIC = b"\x63\x82\x53\x63"
mac = open(f"/sys/class/net/{IFACE}/address").read().strip()
chaddr = bytes.fromhex(mac.replace(":", ""))
xid = random.getrandbits(32)
sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP))
sock.bind((IFACE, ETH_P_IP))


def checksum(data):
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def frame(mtype, extra):
    msg = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 1, 1, 6, 0, xid, 0, 0x8000, bytes(4), bytes(4),
                      bytes(4), bytes(4), chaddr, b"", b"")
    msg += MAGIC + bytes([53, 1, mtype]) + extra + bytes([55, 4, 1, 3, 6, 51, 255])
    msg += bytes(max(0, 300 - len(msg)))
    udp = struct.pack("!HHHH", 68, 67, 8 + len(msg), 0) + msg
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, bytes(4), b"\xff" * 4)
    return hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:] + udp


def parse(pkt):
    if len(pkt) < 28 or pkt[0] >> 4 != 4 or pkt[9] != 17:
        return None
    ihl = (pkt[0] & 15) * 4
    if struct.unpack("!H", pkt[ihl + 2:ihl + 4])[0] != 68:
        return None
    m = pkt[ihl + 8:]
    if len(m) < 240 or m[0] != 2 or struct.unpack("!I", m[4:8])[0] != xid or m[28:34] != chaddr[:6]:
        return None
    if m[236:240] != MAGIC:
        return None
    opts, i = {}, 240
    while i < len(m) and m[i] != 255:
        if m[i] == 0:
            i += 1
            continue
        if i + 1 >= len(m):
            break
        opts[m[i]] = m[i + 2:i + 2 + m[i + 1]]
        i += 2 + m[i + 1]
    return socket.inet_ntoa(m[16:20]), opts


def exchange(mtype, extra, wanted, tries=8, wait=4.0):
    for _ in range(tries):
        sock.sendto(frame(mtype, extra), (IFACE, ETH_P_IP, 0, 0, b"\xff" * 6))
        end = time.time() + wait
        while time.time() < end:
            sock.settimeout(max(0.05, end - time.time()))
            try:
                got = parse(sock.recv(4096))
            except socket.timeout:
                break
            if got and got[1].get(53, b"")[:1] in wanted:
                return got
    return None


offer = exchange(1, b"", {b"\x02"})
if offer is None:
    sys.exit(f"no DHCPOFFER for {mac}")
server = offer[1].get(54, b"")[:4]
ack = exchange(3, bytes([50, 4]) + socket.inet_aton(offer[0]) + (bytes([54, 4]) + server if server else b""), {b"\x05"})
if ack is None:
    sys.exit(f"no DHCPACK for {mac}")
print(f"{mac} leased {ack[0]}")
PY
