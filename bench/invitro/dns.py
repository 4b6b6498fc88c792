"""The in-vitro web's DNS server: the model's host names → their IPs, over UDP and TCP on loopback.

Role: lets the crawler resolve ``h00017.web.test`` with its real resolver (aiodns pointed at
``127.0.0.1:PORT``) instead of a fake one, so the DNS stage is exercised too. BUbiNG's test
setup avoids DNS with IP-literal hosts or a ``FakeResolver`` (peers.md §1.3); a real server
on loopback costs little and tests more.

Answers, all authoritative (AA set):
- ``A`` (or ``ANY``) for a model host: one A record, ``WebModel.ip_of(host)``, TTL ``ttl``;
- another type for a model host, or a query for the domain itself: NOERROR with no answer;
- any other name: NXDOMAIN; another class: REFUSED; another opcode: NOTIMP; bad packet: FORMERR.

A host can be moved while the server runs (``DnsService.move``: a test calls it on the
server's loop), to another loopback address only, so a crawler's re-resolution of expired
answers can be watched; with ``ttl`` 0 every answer expires at once. Each query is kept in a
bounded log (``DnsService.log``: when it came, the name, the type, the address answered).

The wire format (RFC 1035 §4) for one question and A answers is small enough to write by hand:
a 12-byte header, the question copied back as received (so 0x20 case randomisation survives),
and a compression pointer to it in each answer. EDNS OPT records in a query are ignored and none
is sent, which RFC 6891 §7 allows.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass
from typing import cast

from bench.invitro.model import Web

A, ANY, CLASS_IN = 1, 255, 1
NOERROR, FORMERR, NXDOMAIN, NOTIMP, REFUSED = 0, 1, 3, 4, 5
LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")


@dataclass(frozen=True, slots=True)
class DnsStatistics:
    queries: int
    answers: int  # queries answered with an A record
    nxdomain: int
    other: int  # NODATA, errors


@dataclass(frozen=True, slots=True)
class DnsQuery:
    """One query as the server saw it."""

    at: float  # monotonic time of arrival (the request log's clock)
    name: str  # lower case, without the final dot
    qtype: int
    address: str | None  # the A record sent, None when there was none


class DnsService:
    """Builds answers from the model and counts them; the protocols below only move bytes."""

    def __init__(self, model: Web, ttl: int = 300, log_size: int = 100_000) -> None:
        self.model = model
        self.ttl = ttl
        self.domain = model.domain.lower().rstrip(".")
        self.queries = self.answers = self.nxdomain = 0
        self.moved: dict[str, str] = {}  # host -> the address answered instead of the model's
        self.log: deque[DnsQuery] = deque(maxlen=log_size)  # the latest queries, oldest first

    def move(self, host: str, ip: str | None) -> None:
        """Answer ``ip`` for the model host ``host`` from now on (None: its model IP again).

        Loopback addresses only, so that no crawler is ever sent off the machine.
        """
        name = host.lower().rstrip(".")
        if self.model.host_index(name) is None:
            raise ValueError(f"{host} is not a host of the in-vitro web")
        if ip is None:
            self.moved.pop(name, None)
        elif ipaddress.IPv4Address(ip) not in LOOPBACK:
            raise ValueError(f"{ip} is not a loopback address (127.0.0.0/8)")
        else:
            self.moved[name] = ip

    def statistics(self) -> DnsStatistics:
        other = self.queries - self.answers - self.nxdomain
        return DnsStatistics(self.queries, self.answers, self.nxdomain, other)

    def answer(self, query: bytes) -> bytes | None:
        """The response message to a query message; None for what deserves no answer."""
        if len(query) < 12:
            return None
        ident, flags, qdcount = struct.unpack_from("!HHH", query)
        if flags & 0x8000:
            return None  # a response, not a query
        self.queries += 1
        opcode = (flags >> 11) & 0xF
        reply_flags = 0x8000 | (opcode << 11) | 0x0400 | (flags & 0x0100) | 0x0080  # QR AA RD RA
        if opcode != 0:
            return self._reply(ident, reply_flags | NOTIMP, b"")
        parsed = _question(query) if qdcount == 1 else None
        if parsed is None:
            return self._reply(ident, reply_flags | FORMERR, b"")
        name, qtype, qclass, end = parsed
        question = query[12:end]
        if qclass != CLASS_IN:
            return self._reply(ident, reply_flags | REFUSED, question)
        known = self.model.host_index(name) is not None
        address = (self.moved.get(name) or self.model.ip_of(name)) if known and qtype in (A, ANY) else None
        self.log.append(DnsQuery(time.monotonic(), name, qtype, address))
        if address is not None:
            self.answers += 1
            record = struct.pack("!HHHIH", 0xC00C, A, CLASS_IN, self.ttl, 4) + socket.inet_aton(address)
            return self._reply(ident, reply_flags | NOERROR, question, record)
        if known or name == self.domain:
            return self._reply(ident, reply_flags | NOERROR, question)
        self.nxdomain += 1
        return self._reply(ident, reply_flags | NXDOMAIN, question)

    def _reply(self, ident: int, flags: int, question: bytes, record: bytes = b"") -> bytes:
        return struct.pack("!HHHHHH", ident, flags, 1 if question else 0, 1 if record else 0, 0, 0) + question + record


def _question(message: bytes) -> tuple[str, int, int, int] | None:
    """(name in lower case without the final dot, qtype, qclass, offset after the question)."""
    labels = []
    at = 12
    while True:
        if at >= len(message):
            return None
        length = message[at]
        if length == 0:
            break
        if length & 0xC0 or at + 1 + length > len(message):
            return None  # compression in a question, or a truncated label
        labels.append(message[at + 1 : at + 1 + length])
        at += 1 + length
    if at + 5 > len(message):
        return None
    qtype, qclass = struct.unpack_from("!HH", message, at + 1)
    try:
        name = b".".join(labels).decode("ascii").lower()
    except UnicodeDecodeError:
        return None
    return name, qtype, qclass, at + 5


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, service: DnsService) -> None:
        self.service = service
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)  # uvloop's are not subclasses

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        reply = self.service.answer(data)
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply, addr)


class _Tcp(asyncio.Protocol):
    """DNS over TCP: messages with a two-byte length prefix (RFC 1035 §4.2.2)."""

    def __init__(self, service: DnsService) -> None:
        self.service = service
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= 2 and self.transport is not None:
            (length,) = struct.unpack_from("!H", self.buffer)
            if len(self.buffer) < 2 + length:
                return
            message = bytes(self.buffer[2 : 2 + length])
            del self.buffer[: 2 + length]
            reply = self.service.answer(message)
            if reply is not None:
                self.transport.write(struct.pack("!H", len(reply)) + reply)


class DnsServer:
    """The UDP and TCP listeners of one :class:`DnsService`, on one address."""

    def __init__(self, service: DnsService, udp: asyncio.DatagramTransport, tcp: asyncio.AbstractServer) -> None:
        self.service = service
        self._udp = udp
        self._tcp = tcp
        host, port = udp.get_extra_info("sockname")[:2]
        self.address = f"{host}:{port}"

    def close(self) -> None:
        self._udp.close()
        self._tcp.close()

    async def wait_closed(self) -> None:
        await self._tcp.wait_closed()


async def start_dns(model: Web, host: str = "127.0.0.1", port: int = 0, ttl: int = 300) -> DnsServer:
    """Serve DNS for the model on ``host:port`` (UDP and TCP; port 0 picks one free for both)."""
    loop = asyncio.get_running_loop()
    service = DnsService(model, ttl)
    for _ in range(20):
        udp_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tcp_sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            udp_sock.bind((host, port))
            tcp_sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            tcp_sock.bind((host, udp_sock.getsockname()[1]))
        except OSError as e:
            udp_sock.close()
            tcp_sock.close()
            if e.errno == errno.EADDRINUSE and port == 0:
                continue  # the TCP side of the UDP port is taken: pick another
            raise
        udp, _ = await loop.create_datagram_endpoint(lambda: _Udp(service), sock=udp_sock)
        tcp = await loop.create_server(lambda: _Tcp(service), sock=tcp_sock)
        return DnsServer(service, udp, tcp)
    raise OSError(errno.EADDRINUSE, f"no port free for both UDP and TCP on {host}")
